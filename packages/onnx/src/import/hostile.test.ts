// Hostile and invalid ONNX files: each gets a typed error fast, with bounded memory, naming the culprit.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Tensor, randn } from '@qtk/tensor';
import { OnnxFormatError, OnnxLimitError, importOnnx, UnsupportedOnnxOpError } from '../index.js';
import { importOnnx as importOnnxFile } from '../node.js';
import { DataType, type NodeMsg } from '../onnx-schema.js';
import { floatInitializer, handMadeModel, valueInfo } from '../testing/hand-made-model.js';
import { int64Proto } from '../tensor-proto.js';
import { checkGraph } from './graph-checks.js';

const f32 = (name: string, dims: (number | string)[]) => valueInfo(name, dims);
const model = handMadeModel;

/** The error thrown by f. Refusing before the work is shown by the node the message names, not by a clock. */
function failure(f: () => unknown): { err: unknown } {
  try {
    f();
  } catch (err) {
    return { err };
  }
  throw new Error('expected an error');
}

function rssMb(): number {
  return process.memoryUsage().rss / 2 ** 20;
}

describe('import cost is bounded (issue 12.1)', () => {
  it('rejects an input declared [1, 1, 20000, 20000] before allocating it, naming the input and maxElements', () => {
    const bytes = model([{ op_type: 'Conv', name: 'conv', input: ['x', 'w'], output: ['y'] }], {
      input: [f32('x', [1, 1, 20000, 20000])],
      output: [f32('y', [1, 1, 19998, 19998])],
      initializer: [floatInitializer('w', [1, 1, 3, 3])],
    });
    expect(bytes.length).toBeLessThan(1000);
    const rss = rssMb();
    const { err } = failure(() => importOnnx(bytes));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(/input 'x'.*\[1, 1, 20000, 20000\].*400000000 elements.*maxElements/);
    expect(rssMb() - rss).toBeLessThan(200);
  });

  it('rejects ConstantOfShape [50000, 50000] before allocating it, naming the node', () => {
    const bytes = model(
      [
        { op_type: 'ConstantOfShape', name: 'big', input: ['s'], output: ['c'] },
        { op_type: 'Add', name: 'add', input: ['x', 'c'], output: ['y'] },
      ],
      { initializer: [int64Proto('s', [50000, 50000])] },
    );
    const { err } = failure(() => importOnnx(bytes));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(/ConstantOfShape 'big'.*\[50000, 50000\].*maxElements/);
  });

  it('rejects a broadcast that blows two small constants up, naming the node', () => {
    const bytes = model(
      [
        { op_type: 'Add', name: 'outer', input: ['a', 'b'], output: ['c'] },
        {
          op_type: 'ReduceSum',
          name: 'sum',
          input: ['c'],
          output: ['s'],
          attribute: [{ name: 'keepdims', i: 0, type: 2 }],
        },
        { op_type: 'Add', name: 'add', input: ['x', 's'], output: ['y'] },
      ],
      { initializer: [floatInitializer('a', [30000, 1]), floatInitializer('b', [1, 30000])] },
    );
    const { err } = failure(() => importOnnx(bytes));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(/Add 'outer'.*\[30000, 30000\].*maxElements/);
  });

  it('rejects a Resize / Pad whose output is far larger than its input, naming the node', () => {
    const resize = model(
      [
        {
          op_type: 'Resize',
          name: 'up',
          input: ['x', '', 'sc'],
          output: ['y'],
          attribute: [{ name: 'mode', s: new TextEncoder().encode('nearest'), type: 3 }],
        },
      ],
      {
        input: [f32('x', [1, 1, 8, 8])],
        output: [f32('y', [1, 1, 80000, 80000])],
        initializer: [floatInitializer('sc', [4], [1, 1, 10000, 10000])],
      },
    );
    const r = failure(() => importOnnx(resize));
    expect(r.err).toBeInstanceOf(OnnxLimitError);
    expect((r.err as Error).message).toMatch(/Resize 'up'.*maxElements/);
    const pad = model([{ op_type: 'Pad', name: 'pad', input: ['x', 'p'], output: ['y'] }], {
      initializer: [int64Proto('p', [0, 0, 100000, 100000])],
    });
    const p = failure(() => importOnnx(pad));
    expect(p.err).toBeInstanceOf(OnnxLimitError);
    expect((p.err as Error).message).toMatch(/Pad 'pad'.*maxElements/);
  });

  it('bounds the multiply-adds of all convolutions together', () => {
    // 60 convolutions of 23.04e6 multiply-adds each; with maxElements = 1.5e6 the budget is 512 × 1.5e6 =
    // 7.68e8, which the 34th convolution passes.
    const nodes: NodeMsg[] = Array.from({ length: 60 }, (_, i) => ({
      op_type: 'Conv',
      name: `c${i}`,
      input: [i ? `v${i}` : 'x', 'w'],
      output: [i === 59 ? 'y' : `v${i + 1}`],
      attribute: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
    }));
    const bytes = model(nodes, {
      input: [f32('x', [1, 16, 100, 100])],
      output: [f32('y', [1, 16, 100, 100])],
      initializer: [floatInitializer('w', [16, 16, 3, 3])],
    });
    const { err } = failure(() => importOnnx(bytes, { maxElements: 1_500_000 }));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(/at Conv 'c33'.*multiply-adds, more than 512 × maxElements = 768000000/);
  });

  it("bounds a convolution's column matrix, not only its output", () => {
    // One output channel, 64 inputs and an 11x11 kernel: a small output, a 1.2e9-element column matrix.
    const bytes = model(
      [
        {
          op_type: 'Conv',
          name: 'tall',
          input: ['x', 'w'],
          output: ['y'],
          attribute: [{ name: 'pads', ints: [5, 5, 5, 5], type: 7 }],
        },
      ],
      {
        input: [f32('x', [1, 64, 400, 400])],
        output: [f32('y', [1, 1, 400, 400])],
        initializer: [floatInitializer('w', [1, 64, 11, 11])],
      },
    );
    const { err } = failure(() => importOnnx(bytes));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(
      /Conv 'tall' would compute a column matrix of shape \[7744, 160000\].*maxElements/,
    );
  });

  it('bounds the tensors computed over the whole import, not only each one', () => {
    const nodes: NodeMsg[] = Array.from({ length: 40 }, (_, i) => ({
      op_type: 'Relu',
      name: `r${i}`,
      input: [i ? `v${i}` : 'x'],
      output: [i === 39 ? 'y' : `v${i + 1}`],
    }));
    const bytes = model(nodes, { input: [f32('x', [1, 1, 1000, 1000])], output: [f32('y', [1, 1, 1000, 1000])] });
    const { err } = failure(() => importOnnx(bytes, { maxElements: 2_000_000 }));
    expect(err).toBeInstanceOf(OnnxLimitError);
    expect((err as Error).message).toMatch(/at node 'r\d+'.*8 × maxElements/);
    expect(importOnnx(bytes, { maxElements: 6_000_000 })).toBeTruthy();
  });

  it('imports a large but legal model, and the cap can be raised for larger ones', () => {
    const bytes = model(
      [
        {
          op_type: 'Conv',
          name: 'conv',
          input: ['x', 'w'],
          output: ['c'],
          attribute: [{ name: 'pads', ints: [1, 1, 1, 1], type: 7 }],
        },
        { op_type: 'Relu', name: 'relu', input: ['c'], output: ['y'] },
      ],
      {
        input: [f32('x', [1, 3, 512, 512])],
        output: [f32('y', [1, 16, 512, 512])],
        initializer: [floatInitializer('w', [16, 3, 3, 3])],
      },
    );
    const gm = importOnnx(bytes);
    expect((gm.call(randn([1, 3, 512, 512])) as Tensor).shape).toEqual([1, 16, 512, 512]);
    expect(() => importOnnx(bytes, { maxElements: 1_500_000 })).toThrow(OnnxLimitError);
    const big = model([{ op_type: 'Relu', name: 'r', input: ['x'], output: ['y'] }], {
      input: [f32('x', [1, 1, 6000, 6000])],
      output: [f32('y', [1, 1, 6000, 6000])],
    });
    expect(() => importOnnx(big)).toThrow(/maxElements/);
    expect(importOnnx(big, { maxElements: 40_000_000 })).toBeTruthy();
  });
});

describe('malformed tensors and shapes get typed errors (issue 12.2)', () => {
  it('negative, fractional or oversized initializer dims name the initializer and the dims field', () => {
    for (const dims of [[-1], [3, -2], [2 ** 40], [1e6, 1e6, 1e6], [2 ** 31, 2 ** 31]]) {
      const bytes = model([{ op_type: 'Add', name: 'add', input: ['x', 'w'], output: ['y'] }], {
        initializer: [{ name: 'w', dims, data_type: DataType.FLOAT, raw_data: new Uint8Array(16) }],
      });
      const { err } = failure(() => importOnnx(bytes));
      expect(err, `dims ${dims}`).toBeInstanceOf(OnnxFormatError);
      expect((err as Error).message).toMatch(/initializer 'w'.*dims/);
    }
    // Read from a file, the error names the file too.
    const path = join(mkdtempSync(join(tmpdir(), 'qtk-onnx-hostile-')), 'bad-dims.onnx');
    writeFileSync(
      path,
      model([{ op_type: 'Add', name: 'add', input: ['x', 'w'], output: ['y'] }], {
        initializer: [{ name: 'w', dims: [-1], data_type: DataType.FLOAT, raw_data: new Uint8Array(16) }],
      }),
    );
    expect(() => importOnnxFile(path)).toThrow(OnnxFormatError);
    expect(() => importOnnxFile(path)).toThrow(
      /^importOnnx\('.*bad-dims\.onnx'\): initializer 'w': dims\[0\] = -1 is not a valid dimension/,
    );
    rmSync(dirname(path), { recursive: true, force: true });
    const typed = model([{ op_type: 'Add', name: 'add', input: ['x', 'w'], output: ['y'] }], {
      initializer: [{ name: 'w', dims: [-4], data_type: DataType.FLOAT, float_data: [1, 2, 3, 4] }],
    });
    expect(() => importOnnx(typed)).toThrow(OnnxFormatError);
  });

  it('input dims beyond the typed-array limit name the input and the field', () => {
    for (const dim of [2 ** 33, 2 ** 53 + 10]) {
      const bytes = model([{ op_type: 'Relu', name: 'r', input: ['x'], output: ['y'] }], {
        input: [f32('x', [dim, 4])],
      });
      const { err } = failure(() => importOnnx(bytes));
      expect(err).toBeInstanceOf(OnnxLimitError);
      expect((err as Error).message).toMatch(/input 'x'.*dim_value/);
    }
  });
});

describe('invalid graphs get typed errors naming the culprit (issue 12.8)', () => {
  const relu = (o = 'y'): NodeMsg => ({ op_type: 'Relu', name: 'r', input: ['x'], output: [o] });

  it('duplicate output names', () => {
    const bytes = model([relu('y'), { op_type: 'Relu', name: 'r2', input: ['x'], output: ['y'] }]);
    expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
    expect(() => importOnnx(bytes)).toThrow(/'y'.*produced by both 'r' and 'r2'/);
    const graphOut = model([relu('y')], { output: [f32('y', ['N', 4]), f32('y', ['N', 4])] });
    expect(() => importOnnx(graphOut)).toThrow(OnnxFormatError);
    expect(() => importOnnx(graphOut)).toThrow(/graph output 'y' is listed twice/);
  });

  it('an initializer or graph input declared twice, or overwritten by a node', () => {
    const add: NodeMsg = { op_type: 'Add', name: 'add', input: ['x', 'w'], output: ['y'] };
    const twice = model([add], { initializer: [floatInitializer('w', [4]), floatInitializer('w', [4])] });
    expect(() => importOnnx(twice)).toThrow(OnnxFormatError);
    expect(() => importOnnx(twice)).toThrow(/initializer 'w' is declared twice/);
    expect(() =>
      importOnnx(
        model([add], { input: [f32('x', ['N', 4]), f32('x', ['N', 4])], initializer: [floatInitializer('w', [4])] }),
      ),
    ).toThrow(/graph input 'x' is declared twice/);
    const overwrite = model([{ op_type: 'Relu', name: 'r', input: ['x'], output: ['w'] }, add], {
      initializer: [floatInitializer('w', [4])],
    });
    expect(() => importOnnx(overwrite)).toThrow(/node 'r' writes 'w', which is already declared as an initializer/);
  });

  it("an op_type that names a property of JavaScript objects ('constructor', 'toString', '__proto__') is an unknown operator", () => {
    for (const op of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const bytes = model([{ op_type: op, name: 'n', input: ['x'], output: ['y'] }]);
      expect(() => importOnnx(bytes)).toThrow(UnsupportedOnnxOpError);
      expect(() => importOnnx(bytes)).toThrow(`- 'n' ai.onnx::${op} (opset 13): operator not supported`);
    }
  });

  it('a graph with no outputs', () => {
    expect(() => importOnnx(model([relu()], { output: [] }))).toThrow(OnnxFormatError);
    expect(() => importOnnx(model([relu()], { output: [] }))).toThrow(/no outputs/);
  });

  it('negative pads', () => {
    const bytes = model(
      [
        {
          op_type: 'Conv',
          name: 'conv',
          input: ['x', 'w'],
          output: ['y'],
          attribute: [{ name: 'pads', ints: [-1, 0, 0, 0], type: 7 }],
        },
      ],
      {
        input: [f32('x', [1, 1, 6, 6])],
        output: [f32('y', [1, 1, 3, 4])],
        initializer: [floatInitializer('w', [1, 1, 3, 3])],
      },
    );
    expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
    expect(() => importOnnx(bytes)).toThrow(/Conv 'conv'.*pads.*-1/);
  });

  it('kernel_shape that contradicts the weights', () => {
    const bytes = model(
      [
        {
          op_type: 'Conv',
          name: 'conv',
          input: ['x', 'w'],
          output: ['y'],
          attribute: [{ name: 'kernel_shape', ints: [5, 5], type: 7 }],
        },
      ],
      {
        input: [f32('x', [1, 1, 6, 6])],
        output: [f32('y', [1, 1, 4, 4])],
        initializer: [floatInitializer('w', [1, 1, 3, 3])],
      },
    );
    expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
    expect(() => importOnnx(bytes)).toThrow(/Conv 'conv'.*kernel_shape \[5, 5\].*weight.*\[1, 1, 3, 3\]/);
  });

  it('NaN or infinite weights', () => {
    for (const bad of [NaN, Infinity]) {
      const bytes = model([{ op_type: 'Conv', name: 'conv', input: ['x', 'w'], output: ['y'] }], {
        input: [f32('x', [1, 1, 6, 6])],
        output: [f32('y', [1, 1, 4, 4])],
        initializer: [floatInitializer('w', [1, 1, 3, 3], [0, 1, 2, 3, bad, 5, 6, 7, 8])],
      });
      expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
      expect(() => importOnnx(bytes)).toThrow(/node 'conv'.*weight.*non-finite value (NaN|Infinity) at index 4/);
    }
  });

  it('a missing initializer names the input nobody produces', () => {
    const bytes = model([{ op_type: 'Add', name: 'add', input: ['x', 'bias'], output: ['y'] }]);
    expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
    expect(() => importOnnx(bytes)).toThrow(
      /node 'add' \(Add\) reads 'bias', which is no graph input, initializer or node output/,
    );
  });

  it('nodes out of topological order (which onnxruntime accepts) are sorted, with a warning naming both nodes', () => {
    const bytes = model([
      { op_type: 'Neg', name: 'n2', input: ['a'], output: ['y'] },
      { op_type: 'Relu', name: 'r1', input: ['x'], output: ['a'] },
    ]);
    const warnings: string[] = [];
    const gm = importOnnx(bytes, { onWarning: (m) => warnings.push(m) });
    expect(warnings).toEqual([expect.stringMatching(/node 'n2' reads 'a' before node 'r1' produces it/)]);
    const x = new Tensor({ data: Float32Array.of(-1, 2, -3, 4), shape: [1, 4], dtype: 'float32' });
    expect(Array.from((gm.call(x) as Tensor).values() as Float32Array)).toEqual([-0, -2, -0, -4]);
  });

  // The bound tells linear from quadratic, not fast from slow: a quadratic sort or cycle search over 200,000
  // nodes (4·10^10 steps) takes minutes, the linear one about 0.2 s, so 5 s holds on a loaded CI machine.
  it('checking order and cycles is linear: 200,000 nodes in reverse order sort, and a 200,000-node cycle is found, within seconds', () => {
    const n = 200_000;
    const chain: NodeMsg[] = Array.from({ length: n }, (_, k) => ({
      op_type: 'Relu',
      name: `r${k}`,
      input: [k === 0 ? 'x' : `v${k}`],
      output: [k === n - 1 ? 'y' : `v${k + 1}`],
    }));
    const graph = (node: NodeMsg[]) => ({ node, input: [f32('x', [1])], output: [f32('y', [1])] });
    const order = checkGraph(graph([...chain].reverse()), new Set(), () => {});
    expect(order.map((m) => m.name)).toEqual(chain.map((m) => m.name));
    const ring = chain.map((m, k) => (k === 0 ? { ...m, input: ['v0'] } : m));
    ring[n - 1] = { ...ring[n - 1]!, output: ['v0'] };
    ring.push({ op_type: 'Relu', name: 'out', input: ['x'], output: ['y'] });
    expect(() => checkGraph(graph(ring), new Set(), () => {})).toThrow(
      /cycle of 200000 node\(s\): 'r0' → 'r199999' → 'r199998'.*… 199990 more ….*→ 'r1' → 'r0' \(/,
    );
  });

  it('a cyclic graph names the cycle', () => {
    const bytes = model([
      { op_type: 'Add', name: 'a1', input: ['x', 'b'], output: ['a'] },
      { op_type: 'Relu', name: 'r1', input: ['a'], output: ['b'] },
      { op_type: 'Relu', name: 'r2', input: ['b'], output: ['y'] },
    ]);
    expect(() => importOnnx(bytes)).toThrow(OnnxFormatError);
    expect(() => importOnnx(bytes)).toThrow(/cycle of 2 node\(s\): 'a1' → 'r1' → 'a1'/);
  });
});
