// Opset 18's new forms of the ops the importer supports, each imported and run against onnxruntime-node:
// reductions with their axes as an input (and the reductions composed of others, at 13 and 18), Split's num_outputs, Pad's axes, Resize's axes /
// keep_aspect_ratio_policy / antialias, ScatterND's max and min, and PyTorch's LayerNorm over ReduceMean-18.
import { LayerNorm } from '@qtk/nn';
import { Generator, randn, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx, UnsupportedOnnxOpError } from '../index.js';
import { compareWithOrt } from '../testing/opset-check.js';
import { float32s, int64s, op, opsetModel } from '../testing/opset-models.js';

const x = (shape: number[], seed = 3) => randn(shape, { generator: new Generator(seed) });

describe('opset 18 reductions take their axes as an input', () => {
  for (const kind of ['ReduceMean', 'ReduceMax', 'ReduceSum']) {
    it(`${kind} over axes [1, -1] from an input, with and without keepdims`, async () => {
      for (const keepdims of [0, 1]) {
        const r = await compareWithOrt(
          {
            nodes: [op(kind, ['x', 'axes'], ['y'], { keepdims })],
            inputs: { x: [2, 3, 4] },
            outputs: ['y'],
            initializers: [int64s('axes', [1, -1])],
            opset: 18,
          },
          { x: x([2, 3, 4]) },
        );
        expect(r.shapes[0]).toEqual(keepdims ? [2, 1, 1] : [2]);
        expect(r.relError).toBeLessThan(1e-6);
      }
    });
  }

  it('the reductions built from sum, max and abs (Min, L1, L2, SumSquare, LogSum, LogSumExp), at 13 and 18', async () => {
    const kinds = ['ReduceMin', 'ReduceL1', 'ReduceL2', 'ReduceSumSquare', 'ReduceLogSum', 'ReduceLogSumExp'];
    for (const kind of kinds) {
      for (const opset of [13, 18]) {
        for (const keepdims of [0, 1]) {
          const axes = opset >= 18 ? { initializers: [int64s('axes', [0, -1])] } : {};
          const node =
            opset >= 18
              ? op(kind, ['x', 'axes'], ['y'], { keepdims })
              : op(kind, ['x'], ['y'], { keepdims, axes: [0, -1] });
          // positive values, so that LogSum has a logarithm; LogSumExp of 40s would overflow without the shift
          const input = x([2, 3, 4])
            .mul(x([2, 3, 4]))
            .add(kind === 'ReduceLogSumExp' ? 40 : 0.1);
          const r = await compareWithOrt(
            { nodes: [node], inputs: { x: [2, 3, 4] }, outputs: ['y'], ...axes, opset },
            { x: input },
          );
          expect(r.shapes[0], `${kind} at ${opset}`).toEqual(keepdims ? [1, 3, 1] : [3]);
          expect(r.relError, `${kind} at ${opset}`).toBeLessThan(1e-6);
        }
      }
    }
  });

  it('no axes reduce everything; noop_with_empty_axes = 1 passes x through', async () => {
    const all = await compareWithOrt(
      { nodes: [op('ReduceMean', ['x'], ['y'], { keepdims: 0 })], inputs: { x: [2, 3] }, outputs: ['y'], opset: 18 },
      { x: x([2, 3]) },
    );
    expect(all.shapes[0]).toEqual([]);
    expect(all.relError).toBeLessThan(1e-6);
    const noop = await compareWithOrt(
      {
        nodes: [op('ReduceMax', ['x'], ['y'], { noop_with_empty_axes: 1 })],
        inputs: { x: [2, 3] },
        outputs: ['y'],
        opset: 18,
      },
      { x: x([2, 3]) },
    );
    expect(noop.shapes[0]).toEqual([2, 3]);
    expect(noop.relError).toBe(0);
  });

  it("PyTorch's decomposed LayerNorm over ReduceMean-18 (axes an input) still becomes one LayerNorm", async () => {
    const r = await compareWithOrt(
      {
        nodes: [
          op('ReduceMean', ['x', 'axes'], ['m']),
          op('Sub', ['x', 'm'], ['c']),
          op('Pow', ['c', 'two'], ['sq']),
          op('ReduceMean', ['sq', 'axes'], ['v']),
          op('Add', ['v', 'eps'], ['ve']),
          op('Sqrt', ['ve'], ['sd']),
          op('Div', ['c', 'sd'], ['y']),
        ],
        inputs: { x: [2, 5, 8] },
        outputs: ['y'],
        initializers: [int64s('axes', [-1]), float32s('two', [2], []), float32s('eps', [1e-5], [])],
        opset: 18,
      },
      { x: x([2, 5, 8]) },
    );
    const modules = [...r.gm.graph.nodes].filter((n) => n.op === 'call_module');
    expect(modules).toHaveLength(1);
    expect(r.gm.getSubmodule(String(modules[0]!.target))).toBeInstanceOf(LayerNorm);
    expect(r.relError).toBeLessThan(1e-5);
  });
});

describe('opset 18 Split, Pad and ScatterND', () => {
  it('Split by num_outputs: equal parts, the last one smaller (7 → 3, 3, 1)', async () => {
    const r = await compareWithOrt(
      {
        nodes: [op('Split', ['x'], ['a', 'b', 'c'], { axis: 1, num_outputs: 3 })],
        inputs: { x: [2, 7] },
        outputs: ['a', 'b', 'c'],
        opset: 18,
      },
      { x: x([2, 7]) },
    );
    expect(r.shapes).toEqual([
      [2, 3],
      [2, 3],
      [2, 1],
    ]);
    expect(r.relError).toBe(0);
  });

  it('Split: num_outputs that disagrees with the outputs is an invalid model', () => {
    const bytes = opsetModel({
      nodes: [op('Split', ['x'], ['a', 'b'], { axis: 1, num_outputs: 3 })],
      inputs: { x: [2, 6] },
      outputs: ['a', 'b'],
      opset: 18,
    });
    expect(() => importOnnx(bytes)).toThrow(
      "importOnnx: Split 'Split_a': num_outputs = 3 but the node has 2 outputs; the model is invalid",
    );
  });

  it('Pad with an axes input pads only those axes (negative axes count from the end)', async () => {
    for (const mode of ['constant', 'reflect', 'edge']) {
      const r = await compareWithOrt(
        {
          nodes: [op('Pad', ['x', 'pads', 'value', 'axes'], ['y'], { mode })],
          inputs: { x: [1, 2, 4, 5] },
          outputs: ['y'],
          initializers: [int64s('pads', [1, 2, 3, 1]), float32s('value', [0.5], []), int64s('axes', [-1, 2])],
          opset: 18,
        },
        { x: x([1, 2, 4, 5]) },
      );
      expect(r.shapes[0]).toEqual([1, 2, 7, 9]); // 4 + 2 + 1, 5 + 1 + 3
      expect(r.relError).toBe(0);
    }
  });

  it('ScatterND reductions: max and min (18), add and mul (16), repeated indices combine in order', async () => {
    for (const reduction of ['max', 'min', 'add', 'mul']) {
      const r = await compareWithOrt(
        {
          nodes: [op('ScatterND', ['x', 'idx', 'upd'], ['y'], { reduction })],
          inputs: { x: [4, 3], upd: [3, 3] },
          outputs: ['y'],
          initializers: [int64s('idx', [2, 0, 2], [3, 1])],
          opset: 18,
        },
        { x: x([4, 3]), upd: x([3, 3], 9) },
      );
      expect(r.relError).toBeLessThan(1e-6);
    }
  });

  it("ScatterND: a reduction the model's opset does not define is refused by name", () => {
    const bytes = opsetModel({
      nodes: [op('ScatterND', ['x', 'idx', 'upd'], ['y'], { reduction: 'max' })],
      inputs: { x: [4, 3], upd: [1, 3] },
      outputs: ['y'],
      initializers: [int64s('idx', [2], [1, 1])],
      opset: 17,
    });
    expect(() => importOnnx(bytes)).toThrow(UnsupportedOnnxOpError);
    expect(() => importOnnx(bytes)).toThrow("reduction 'max' is not an opset-17 ScatterND reduction (none, add, mul)");
  });
});

describe('opset 18 Resize', () => {
  const resizeModel = (
    attrs: Record<string, string | number | number[]>,
    sizes: number[] | null,
    scales?: number[],
  ) => ({
    nodes: [op('Resize', ['x', '', scales ? 'scales' : '', sizes ? 'sizes' : ''], ['y'], attrs)],
    inputs: { x: [1, 2, 6, 8] },
    outputs: ['y'],
    initializers: [...(sizes ? [int64s('sizes', sizes)] : []), ...(scales ? [float32s('scales', scales)] : [])],
    opset: 18,
  });

  it('sizes for the axes listed only', async () => {
    const r = await compareWithOrt(resizeModel({ mode: 'linear', axes: [3, 2] }, [5, 4]), { x: x([1, 2, 6, 8]) });
    expect(r.shapes[0]).toEqual([1, 2, 4, 5]);
    expect(r.relError).toBeLessThan(1e-6);
  });

  it('scales for the axes listed only', async () => {
    const r = await compareWithOrt(resizeModel({ mode: 'nearest', axes: [-1] }, null, [1.5]), { x: x([1, 2, 6, 8]) });
    expect(r.shapes[0]).toEqual([1, 2, 6, 12]);
    expect(r.relError).toBe(0);
  });

  // 6×8 to at most 4×7 keeps the ratio: scale min(4/6, 7/8) = 2/3 → 4×5 (5.33 rounds to 5); at least: 7/8 → 5×7
  for (const [policy, shape] of [
    ['not_larger', [1, 2, 4, 5]],
    ['not_smaller', [1, 2, 5, 7]],
  ] as const) {
    for (const mode of ['linear', 'nearest', 'cubic']) {
      it(`keep_aspect_ratio_policy '${policy}', ${mode}: one scale for both axes, sizes rounded`, async () => {
        const r = await compareWithOrt(resizeModel({ mode, keep_aspect_ratio_policy: policy, axes: [2, 3] }, [4, 7]), {
          x: x([1, 2, 6, 8]),
        });
        expect(r.shapes[0]).toEqual(shape);
        expect(r.relError).toBeLessThan(1e-5);
      });
    }
  }

  it('antialias: ignored by nearest and when enlarging, refused for linear downscaling', async () => {
    // the specification filters linear and cubic only (onnxruntime refuses antialias with nearest): as without it
    const input = x([1, 2, 6, 8]);
    const plain = await compareWithOrt(resizeModel({ mode: 'nearest' }, [1, 2, 3, 4]), { x: input });
    const nearest = importOnnx(opsetModel(resizeModel({ mode: 'nearest', antialias: 1 }, [1, 2, 3, 4])));
    expect(Array.from((nearest.call(input) as Tensor).values())).toEqual(plain.runtime[0]);
    const up = await compareWithOrt(resizeModel({ mode: 'linear', antialias: 1 }, [1, 2, 9, 12]), {
      x: x([1, 2, 6, 8]),
    });
    expect(up.relError).toBeLessThan(1e-6);
    const down = opsetModel(resizeModel({ mode: 'linear', antialias: 1 }, [1, 2, 3, 4]));
    expect(() => importOnnx(down)).toThrow(
      "antialias = 1 with mode 'linear' while downscaling [1, 2, 6, 8] to [1, 2, 3, 4] is not supported",
    );
  });
});

describe('ReduceMax and ReduceMin on bool (opset 20)', () => {
  it('are any() and all() over the axes', async () => {
    const data = new Tensor({ data: Uint8Array.of(0, 1, 0, 1, 1, 1), shape: [2, 3], dtype: 'bool' });
    for (const [kind, want] of [
      ['ReduceMax', [1, 1]],
      ['ReduceMin', [0, 1]],
    ] as const) {
      const r = await compareWithOrt(
        {
          nodes: [op(kind, ['x', 'axes'], ['y'], { keepdims: 0 })],
          inputs: { x: { shape: [2, 3], elem: 9 } },
          outputs: { y: 9 },
          initializers: [int64s('axes', [1])],
          opset: 20,
        },
        { x: data },
      );
      expect(r.qtk[0]).toEqual(want);
      expect(r.runtime[0]).toEqual(want);
    }
  });
});
