import { Conv2d, F, Linear, Module, Parameter, ReLU } from '@qtk/nn';
import { Generator, ones, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import type { GraphModule } from './graph-module.js';
import { deserializeGraphModule, graphModuleToJson } from './serialize.js';
import { runSegments, SplitModelError, splitModel } from './split-model.js';
import { symbolicTrace } from './symbolic-trace.js';
import { RetinaNet, type RetinaData } from './testing/seed-models.js';

/**
 * Two inputs (the second read only by the head), a residual around block 2, a root parameter read
 * with get_attr in two places, one ReLU called in stem and head, and an output computed early.
 */
class TwoStageNet extends Module {
  readonly stem: Conv2d;
  readonly act = new ReLU();
  readonly block: Conv2d;
  readonly head: Linear;
  readonly gain = new Parameter(randn([4, 1, 1], { generator: new Generator(11) }));
  constructor(g: Generator) {
    super();
    this.stem = new Conv2d(2, 4, 3, { padding: 1, generator: g });
    this.block = new Conv2d(4, 4, 3, { padding: 1, generator: g });
    this.head = new Linear(4 * 5 * 5, 6, { generator: g });
  }
  forward(x: Tensor, extra: Tensor): Tensor[] {
    const a = this.act.call(this.stem.call(x)).mul(this.gain);
    const side = a.mean([2, 3]);
    const b = this.block
      .call(a)
      .add(a)
      .add(ones([1]));
    const flat = F.relu(b).mul(this.gain).flatten(1);
    return [this.head.call(this.act.call(flat)).add(extra.sum()), side];
  }
}

const g = new Generator(3);
const x = randn([2, 2, 5, 5], { generator: g });
const extra = randn([2, 3], { generator: g });

function model(): GraphModule {
  const gm = symbolicTrace(new TwoStageNet(new Generator(1)));
  gm.meta = { kind: 'float', note: 'kept' };
  return gm;
}

const bits = (t: unknown) => Array.from((t as Tensor).values());

function thrown(fn: () => unknown): SplitModelError {
  try {
    fn();
  } catch (e) {
    if (e instanceof SplitModelError) return e;
    throw e;
  }
  throw new Error('expected a SplitModelError');
}

describe('splitModel', () => {
  it('cut points are node names as the graph prints them', () => {
    expect(model().graph.nodes.map((n) => n.name)).toEqual([
      'x2',
      'extra2',
      'stem',
      'act',
      'gain',
      'mul',
      'mean',
      'block',
      'add',
      '_tensor_constant0',
      'add_1',
      'relu',
      'mul_1',
      'flatten',
      'act_1',
      'head',
      'sum',
      'add_2',
      'output',
    ]);
  });

  it('chained segments give the whole model outputs bit for bit; values skipping a cut cross it as extra outputs/inputs', () => {
    const gm = model();
    const want = gm.call(x, extra) as Tensor[];
    const segments = splitModel(gm, { at: ['block', 'flatten'] });
    expect(segments).toHaveLength(3);
    // the residual (mul), the early output (mean) and the second graph input (extra) cross the cuts
    expect(segments.map((s) => s.meta.segment)).toEqual([
      { index: 0, count: 3, inputs: ['x2', 'extra2'], outputs: ['block', 'extra2', 'mul', 'mean'] },
      { index: 1, count: 3, inputs: ['block', 'extra2', 'mul', 'mean'], outputs: ['flatten', 'extra2', 'mean'] },
      { index: 2, count: 3, inputs: ['flatten', 'extra2', 'mean'], outputs: [] },
    ]);
    expect(segments.map((s) => s.inputNames)).toEqual([
      ['x2', 'extra2'],
      ['block', 'extra2', 'mul', 'mean'],
      ['flatten', 'extra2', 'mean'],
    ]);
    const first = segments[0]!.call(x, extra) as Tensor[];
    expect(first).toHaveLength(4);
    expect(bits(first[3])).toEqual(bits(want[1])); // mean, computed in segment 0, is the model's second output
    const got = runSegments(segments, [x, extra]) as Tensor[];
    expect(got).toHaveLength(2);
    expect(bits(got[0])).toEqual(bits(want[0]));
    expect(bits(got[1])).toEqual(bits(want[1]));
    expect(got[0]!.shape).toEqual([2, 6]);
  });

  it('every computing node runs in exactly one segment, under its own name; segments hold copies of only the modules they use', () => {
    const gm = model();
    const segments = splitModel(gm, { at: ['mul'] });
    const computing = (m: GraphModule) =>
      m.graph.nodes.filter((n) => !['placeholder', 'output', 'get_attr'].includes(n.op)).map((n) => n.name);
    expect(segments.flatMap(computing)).toEqual(computing(gm));
    expect(computing(segments[0]!)).toEqual(['stem', 'act', 'mul']);
    // the shared ReLU and the root parameter read in both segments are in both, as copies
    const children = (m: GraphModule) => m.namedChildren().map(([n]) => n);
    expect(children(segments[0]!)).toEqual(['stem', 'act']);
    expect(children(segments[1]!)).toEqual(['act', 'block', 'head']);
    for (const seg of segments) {
      const gain = seg.ownParameters().find(([n]) => n === 'gain')?.[1];
      expect(gain).toBeDefined();
      expect(gain).not.toBe((gm as unknown as { gain: Parameter }).gain);
      expect(bits(gain)).toEqual(bits((gm as unknown as { gain: Parameter }).gain));
    }
    expect(segments[0]!.getSubmodule('stem')).not.toBe(gm.getSubmodule('stem'));
    // changing a segment leaves the model alone
    const before = bits((gm.call(x, extra) as Tensor[])[0]);
    (segments[0]!.getSubmodule('stem') as Conv2d).weight.values().fill(0);
    expect(bits((gm.call(x, extra) as Tensor[])[0])).toEqual(before);
    expect(bits((runSegments(segments, [x, extra]) as Tensor[])[0])).not.toEqual(before);
  });

  it("keeps the model's meta and records the segment; a segment survives JSON serialization with its state dict", () => {
    const gm = model();
    const want = gm.call(x, extra) as Tensor[];
    const segments = splitModel(gm, { at: ['add_1'] }).map((s) => {
      const back = deserializeGraphModule(graphModuleToJson(s));
      back.loadStateDict(s.stateDict(), { strict: true });
      return back;
    });
    expect(segments[0]!.meta).toEqual({
      kind: 'float',
      note: 'kept',
      segment: { index: 0, count: 2, inputs: ['x2', 'extra2'], outputs: ['add_1', 'extra2', 'mean'] },
    });
    expect(segments[1]!.className).toBe('TwoStageNetSegment1');
    const got = runSegments(segments, [x, extra]) as Tensor[];
    expect(bits(got[0])).toEqual(bits(want[0]));
    expect(bits(got[1])).toEqual(bits(want[1]));
  });

  it('two-stage detection: the post-processing (an fxWrap-ed method of the root) runs alone in the last segment', () => {
    const gm = symbolicTrace(new RetinaNet(3, new Generator(0))).eval();
    const segments = splitModel(gm, { at: ['head_dequant_3'] });
    expect(segments[1]!.inputNames).toEqual([
      'head_dequant_3',
      'data',
      'backbone_relu',
      'backbone_down',
      'head_dequant',
      'head_dequant_1',
      'head_dequant_2',
    ]);
    const img = randn([1, 1, 8, 8], { generator: new Generator(5) });
    const want = gm.call({ img }) as RetinaData;
    const got = runSegments(segments, [{ img }]) as RetinaData;
    expect(got.predBboxes).toEqual(want.predBboxes);
    expect((got.predBboxes as { boxes: number[][] }).boxes.length).toBeGreaterThan(0);
  });

  it('refuses cuts it cannot make with a SplitModelError naming the node', () => {
    const gm = model();
    const unknown = thrown(() => splitModel(gm, { at: ['blok'] }));
    expect(unknown.code).toBe('E_SPLIT_MODEL');
    expect(unknown.node).toBe('blok');
    expect(unknown.message).toMatch(/has no node 'blok'.*stem, act, mul, mean, block/);
    const order = thrown(() => splitModel(gm, { at: ['flatten', 'block'] }));
    expect(order.node).toBe('block');
    expect(order.message).toMatch(/'block' comes before 'flatten'.*graph order/);
    expect(thrown(() => splitModel(gm, { at: ['block', 'flatten', 'block'] })).message).toMatch(/named twice/);
    expect(thrown(() => splitModel(gm, { at: ['x2'] })).message).toMatch(/'x2' is a placeholder node/);
    expect(thrown(() => splitModel(gm, { at: ['gain'] })).message).toMatch(/get_attr node/);
    expect(thrown(() => splitModel(gm, { at: ['output'] })).message).toMatch(/an output node/);
    const last = thrown(() => splitModel(gm, { at: ['add_2'] }));
    expect(last.node).toBe('add_2');
    expect(last.message).toMatch(/last computing node/);
    expect(thrown(() => splitModel(gm, { at: [] })).message).toMatch(/at least one cut/);
    // a get_attr of a plain root property: the segment could not carry it
    const plain = model();
    (plain as unknown as { alpha: number }).alpha = 3;
    const g = plain.graph;
    g.insertingBefore(g.node('sum')!, () => {
      const alpha = g.getAttr('alpha');
      g.node('sum')!.args = [g.callMethod('mul', [g.node('extra2')!, alpha])];
    });
    plain.recompile();
    const attr = thrown(() => splitModel(plain, { at: ['mul'] }));
    expect(attr.node).toBe('alpha');
    expect(attr.message).toMatch(/root attribute that is a number.*register it as a buffer/);
    expect(() => splitModel(gm, {} as never)).toThrow(/options.at must be an array/);
    expect(() => runSegments([], [x])).toThrow(/no segments/);
  });
});
