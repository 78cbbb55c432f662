import { deepCopy, Module, ReLU } from '@qtk/nn';
import { saveStateDictSync, loadStateDictFileSync } from '@qtk/nn/node';
import { Generator, RegistryError, randn, type Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SerializationError } from './errors.js';
import { ModuleCodecRegistry } from './module-codecs.js';
import { Graph } from './graph.js';
import { GraphModule, SubmoduleContainer } from './graph-module.js';
import {
  deserializeGraphModule,
  graphModuleToJson,
  serializeGraphModule,
  type SerializedGraphModule,
} from './serialize.js';
import { symbolicTrace } from './symbolic-trace.js';
import { HybridModel, RetinaNet, TestFuseNet, type RetinaData } from './testing/seed-models.js';

function same(a: Tensor, b: Tensor) {
  expect(Array.from(b.values())).toEqual(Array.from(a.values()));
}

describe('GraphModule JSON', () => {
  it('keeps the GraphModule meta through serialization and deepCopy; an empty meta writes no field', () => {
    const gm = symbolicTrace(new HybridModel(3, new Generator(0)));
    expect(serializeGraphModule(gm).meta).toBeUndefined();
    expect(Object.keys(gm)).not.toContain('meta');
    gm.meta = { kind: 'qat', march: 'bayes', tags: [1, null, { a: 'b' }] };
    const back = deserializeGraphModule(graphModuleToJson(gm));
    expect(back.meta).toEqual({ kind: 'qat', march: 'bayes', tags: [1, null, { a: 'b' }] });
    const copy = deepCopy(gm);
    expect(copy.meta).toEqual(gm.meta);
    expect(copy.meta).not.toBe(gm.meta);
    expect(deserializeGraphModule(graphModuleToJson(symbolicTrace(new HybridModel(3, new Generator(0))))).meta).toEqual(
      {},
    );
  });

  it("keeps a node's meta entries that are JSON primitives or arrays of them, and drops the rest", () => {
    const gm = symbolicTrace(new HybridModel(3, new Generator(0)));
    const node = gm.graph.nodes[1]!;
    Object.assign(node.meta, { flag: true, scale: 0.5, from: ['conv', 'bn'], nested: { a: 1 }, mixed: [1, {}] });
    const back = deserializeGraphModule(graphModuleToJson(gm)).graph.nodes[1]!;
    expect(back.meta).toMatchObject({ flag: true, scale: 0.5, from: ['conv', 'bn'] });
    expect(back.meta).not.toHaveProperty('nested');
    expect(back.meta).not.toHaveProperty('mixed');
  });

  it('round-trips the hybrid model: graph, module tree (traced-through modules as containers), weights via the state dict file', () => {
    const g = new Generator(0);
    const model = new HybridModel(3, g);
    model.eval();
    const gm = symbolicTrace(model);
    const text = graphModuleToJson(gm);
    const json = JSON.parse(text) as SerializedGraphModule;
    expect([json.format, json.version, json.className]).toEqual(['qtk.graph-module', 1, 'HybridModel']);
    expect(json.modules.map((m) => `${m.path}:${m.type}`)).toEqual([
      'quant:QuantStub',
      'conv0:Conv2d',
      'prelu:PReLU',
      'conv1:ConvBlock',
      'conv1.conv:Conv2d',
      'conv1.prelu:PReLU',
      'conv2:Conv2d',
      'conv3:Conv2d',
      'conv4:Conv2d',
      'selu:_SeluModule',
      'dequant:DeQuantStub',
      'identity:Identity',
    ]);
    expect(json.modules[1]!.config).toEqual({
      inChannels: 3,
      outChannels: 3,
      kernelSize: [1, 1],
      stride: [1, 1],
      padding: [0, 0],
      dilation: [1, 1],
      groups: 1,
      bias: true,
    });

    const dir = mkdtempSync(join(tmpdir(), 'qtk-ir-'));
    try {
      saveStateDictSync(gm.stateDict(), join(dir, 'w.qtk'));
      const back = deserializeGraphModule(text, { stateDict: loadStateDictFileSync(join(dir, 'w.qtk')) });
      expect(back).toBeInstanceOf(GraphModule);
      expect(back.getSubmodule('conv1')).toBeInstanceOf(SubmoduleContainer);
      expect(back.printTabular()).toBe(gm.printTabular());
      expect(serializeGraphModule(back)).toEqual(json);
      back.eval();
      const x = randn([2, 3, 4, 4], { generator: g });
      same(gm.call(x), back.call(x));
      expect(back.graph.node('selu_2')!.scope).toBe('selu');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('round-trips FloatFunctional method nodes and a conv shared by two call sites', () => {
    const model = new TestFuseNet(3, new Generator(1)).eval();
    const gm = symbolicTrace(model);
    const back = deserializeGraphModule(JSON.parse(graphModuleToJson(gm)), { stateDict: gm.stateDict() }).eval();
    const node = back.graph.node('sub_sub')!;
    expect([node.target, node.method]).toEqual(['sub', 'sub']);
    const g = new Generator(2);
    const x = randn([1, 3, 4, 4], { generator: g });
    const y = randn([1, 3, 4, 4], { generator: g });
    same(gm.call(x, y), back.call(x, y));
  });

  it('a graph calling methods of the root needs the model object back (RetinaNet)', () => {
    const g = new Generator(3);
    const model = new RetinaNet(3, g).eval();
    const gm = symbolicTrace(model).eval();
    const text = graphModuleToJson(gm);
    expect(() => deserializeGraphModule(text)).toThrow(
      /calls methods of the root model \(RetinaNet\).*pass \{ root: new RetinaNet\(\.\.\.\) \}/,
    );
    const fresh = new RetinaNet(3, new Generator(99));
    const back = deserializeGraphModule(text, { root: fresh, stateDict: gm.stateDict() }).eval();
    expect(back.getSubmodule('anchors')).toBe(fresh.anchors);
    const img = randn([1, 1, 8, 8], { generator: g });
    expect((back.call({ img }) as RetinaData).predBboxes).toEqual((gm.call({ img }) as RetinaData).predBboxes);
  });

  it('keeps special values, shared module instances and constants', () => {
    class Shared extends Module {
      readonly a = new ReLU();
      readonly b: ReLU;
      constructor() {
        super();
        this.b = this.a;
      }
      forward(x: Tensor): Tensor {
        return this.b.call(this.a.call(x)).add(randn([1], { generator: new Generator(4) }));
      }
    }
    const gm = symbolicTrace(new Shared());
    const g = gm.graph;
    g.insertingBefore(g.outputNode!, () =>
      g.callFunction('clamp', [g.node('add')!, -Infinity, NaN], { $weird: -0, list: [undefined, null, 'x'] }),
    );
    const json = serializeGraphModule(gm);
    expect(json.modules).toEqual([
      { path: 'a', type: 'ReLU', config: null },
      { path: 'b', type: 'ReLU', aliasOf: 'a' },
    ]);
    expect(json.tensors).toEqual([
      { path: '_tensor_constant0', kind: 'buffer', shape: [1], dtype: 'float32', persistent: true },
    ]);
    const back = deserializeGraphModule(JSON.stringify(json), { stateDict: gm.stateDict() });
    expect(back.getSubmodule('a') === back.getSubmodule('b')).toBe(true);
    const clamp = back.graph.node('clamp')!;
    expect(clamp.args.slice(1)).toEqual([-Infinity, NaN]);
    expect(Object.is(clamp.kwargs.$weird, -0)).toBe(true);
    expect(clamp.kwargs.list).toEqual([undefined, null, 'x']);
    same(gm.getTensor('_tensor_constant0'), back.getTensor('_tensor_constant0'));
  });

  it('fails clearly: newer versions, malformed input, unserializable arguments, modules without a codec', () => {
    const gm = symbolicTrace(new HybridModel(3, new Generator(5)));
    const json = serializeGraphModule(gm);
    expect(() => deserializeGraphModule({ ...json, version: 2 })).toThrow(
      /version 2 is newer than this @qtk\/ir reads \(1\)/,
    );
    expect(() => deserializeGraphModule({ ...json, graph: { nodes: [{ name: 'x' }] } })).toThrow(
      /graph\.nodes\.0\.op: Required/,
    );
    expect(() => deserializeGraphModule('{not json')).toThrow(SerializationError);
    const broken = deepCopy(gm);
    broken.graph.node('selu')!.updateArg(0, () => 1);
    expect(() => serializeGraphModule(broken)).toThrow(/cannot serialize node 'selu' args\[0\]: it is a function/);
    const leafy = symbolicTrace(new HybridModel(3, new Generator(6)), { leafModules: ['conv1'] });
    expect(() => deserializeGraphModule(graphModuleToJson(leafy))).toThrow(
      /module 'conv1' is a ConvBlock, which the graph calls, and there is no codec for it/,
    );
    const dangling = serializeGraphModule(gm);
    dangling.graph.nodes[2]!.args = [{ $node: 'nowhere' }];
    expect(() => deserializeGraphModule(dangling)).toThrow(/refers to node 'nowhere'/);
  });

  it('an empty graph module (no modules) round-trips', () => {
    const g = new Graph();
    g.output(g.callFunction('relu', [g.placeholder('x')]));
    const gm = new GraphModule(new SubmoduleContainer(), g, { className: 'Tiny' });
    const back = deserializeGraphModule(graphModuleToJson(gm));
    expect(back.className).toBe('Tiny');
    expect(
      Array.from((back.call(randn([3], { generator: new Generator(7) })) as Tensor).values()).every((v) => v >= 0),
    ).toBe(true);
  });
});

describe('module codecs share the Registry semantics', () => {
  class Widget extends ReLU {}
  const codec = { cls: Widget, schema: z.null(), config: () => null, create: () => new Widget() };

  it('the same codec again is a no-op; another codec for a taken class name, or a miss, is a RegistryError', () => {
    const codecs = new ModuleCodecRegistry();
    codecs.register(codec);
    codecs.register(codec);
    expect(codecs.list()).toEqual(['Widget']);
    expect(codecs.forModule(new Widget())).toBe(codec);
    expect(() => codecs.register({ ...codec })).toThrow(RegistryError);
    expect(() => codecs.register({ ...codec })).toThrow(/two classes called 'Widget' cannot both have a codec/);
    expect(() => codecs.get('Gadget')).toThrow(RegistryError);
    expect(() => codecs.get('Gadget')).toThrow(/no module codec named 'Gadget'; registered: Widget/);
    class Gadget extends ReLU {}
    expect(() => codecs.register({ ...codec, cls: Gadget, schema: {} as never })).toThrow(/no zod schema/);
    expect(codecs.has('Gadget')).toBe(false);
  });
});
