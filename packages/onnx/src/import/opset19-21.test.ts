// Opsets 19 to 21 for the ops the importer supports, each imported and run against onnxruntime-node:
// AveragePool's dilations, Pad's wrap mode, Resize's half_pixel_symmetric, Cast / CastLike (float8 and int4
// refused), the Gelu operator of opset 20, the type-extended shape ops of 21, and the operators refused by name.
import { GELU } from '@qtk/nn';
import { Generator, randn, Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx, OnnxError, UnsupportedOnnxOpError } from '../index.js';
import { DataType } from '../onnx-schema.js';
import { compareWithOrt } from '../testing/opset-check.js';
import { float32s, int64s, op, opsetModel, type AttrValue } from '../testing/opset-models.js';

const x = (shape: number[], seed = 5) => randn(shape, { generator: new Generator(seed) });

describe('AveragePool with dilations (opset 19)', () => {
  const cases: [string, number[], Record<string, AttrValue>][] = [
    ['2-d, dilation 2, stride 1', [1, 2, 7, 8], { kernel_shape: [3, 3], dilations: [2, 2] }],
    [
      '2-d, dilations 2 × 3, stride 2, pads excluded',
      [1, 2, 9, 10],
      { kernel_shape: [2, 3], dilations: [2, 3], strides: [2, 2], pads: [1, 2, 1, 0] },
    ],
    [
      '2-d, pads counted',
      [1, 1, 6, 6],
      { kernel_shape: [3, 2], dilations: [2, 2], pads: [1, 1, 2, 1], count_include_pad: 1 },
    ],
    ['1-d, dilation 3', [2, 3, 11], { kernel_shape: [3], dilations: [3], pads: [2, 1] }],
  ];
  for (const [what, shape, attrs] of cases) {
    it(`${what}: as onnxruntime`, async () => {
      const r = await compareWithOrt(
        { nodes: [op('AveragePool', ['x'], ['y'], attrs)], inputs: { x: shape }, outputs: ['y'], opset: 19 },
        { x: x(shape) },
      );
      expect(r.relError).toBeLessThan(1e-6);
    });
  }

  it('dilations with ceil_mode are refused by name', () => {
    const bytes = opsetModel({
      nodes: [op('AveragePool', ['x'], ['y'], { kernel_shape: [2, 2], dilations: [2, 2], ceil_mode: 1 })],
      inputs: { x: [1, 1, 6, 6] },
      outputs: ['y'],
      opset: 19,
    });
    expect(() => importOnnx(bytes)).toThrow('dilations other than 1 with ceil_mode = 1 are not supported');
  });
});

describe('Pad wrap (opset 19) and Resize half_pixel_symmetric (opset 19)', () => {
  const wrapModel = (shape: number[], pads: number[]) => ({
    nodes: [op('Pad', ['x', 'pads'], ['y'], { mode: 'wrap' })],
    inputs: { x: shape },
    outputs: ['y'],
    initializers: [int64s('pads', pads)],
    opset: 19,
  });

  it('wrap repeats the other end of each axis, as onnxruntime', async () => {
    const r = await compareWithOrt(wrapModel([1, 2, 3, 4], [0, 0, 2, 3, 0, 0, 1, 4]), { x: x([1, 2, 3, 4]) });
    expect(r.shapes[0]).toEqual([1, 2, 6, 11]);
    expect(r.relError).toBe(0);
  });

  it('wrap pads longer than the axis go round again (numpy.pad mode wrap, the reference implementation)', () => {
    // onnxruntime 1.30 reads uninitialised memory for a begin pad longer than the axis, so the values are by hand
    const gm = importOnnx(opsetModel(wrapModel([1, 4], [0, 5, 0, 6])));
    const y = gm.call(new Tensor({ data: Float32Array.of(1, 2, 3, 4), shape: [1, 4], dtype: 'float32' })) as Tensor;
    expect(Array.from(y.values())).toEqual([4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]);
  });

  it('wrap before opset 19 is not a mode: refused', () => {
    const bytes = opsetModel({
      nodes: [op('Pad', ['x', 'pads'], ['y'], { mode: 'wrap' })],
      inputs: { x: [2, 3] },
      outputs: ['y'],
      initializers: [int64s('pads', [0, 1, 0, 1])],
      opset: 18,
    });
    expect(() => importOnnx(bytes)).toThrow("mode 'wrap' is not supported (constant, reflect, edge are at opset 18)");
  });

  for (const [mode, sizes, scales] of [
    ['linear', [1, 2, 5, 7], null],
    ['nearest', null, [1, 1, 0.6, 1.7]],
    ['cubic', [1, 2, 11, 5], null],
  ] as const) {
    it(`half_pixel_symmetric, ${mode}`, async () => {
      const r = await compareWithOrt(
        {
          nodes: [
            op('Resize', ['x', '', scales ? 'scales' : '', sizes ? 'sizes' : ''], ['y'], {
              mode,
              coordinate_transformation_mode: 'half_pixel_symmetric',
            }),
          ],
          inputs: { x: [1, 2, 6, 9] },
          outputs: ['y'],
          initializers: [
            ...(sizes ? [int64s('sizes', [...sizes])] : []),
            ...(scales ? [float32s('scales', [...scales])] : []),
          ],
          opset: 19,
        },
        { x: x([1, 2, 6, 9]) },
      );
      expect(r.relError).toBeLessThan(1e-5);
    });
  }
});

describe('Cast and CastLike (opsets 19, 21)', () => {
  it('Cast with saturate, and CastLike to an integer tensor, as onnxruntime', async () => {
    const r = await compareWithOrt(
      {
        nodes: [op('Cast', ['x'], ['i'], { to: DataType.INT32, saturate: 1 }), op('CastLike', ['i', 'like'], ['y'])],
        inputs: { x: [2, 5] },
        outputs: ['y'],
        initializers: [float32s('like', [0])],
        opset: 21,
      },
      { x: x([2, 5]).mul(4) },
    );
    expect(r.relError).toBe(0);
  });

  it('casts to float8 (19), int4 / uint4 (21) and bfloat16 are refused, naming the type', () => {
    for (const [to, name] of [
      [17, 'float8e4m3fn'],
      [19, 'float8e5m2'],
      [22, 'int4'],
      [21, 'uint4'],
      [16, 'bfloat16'],
    ] as const) {
      const bytes = opsetModel({
        nodes: [op('Cast', ['x'], ['c'], { to, saturate: 0 }), op('Cast', ['c'], ['y'], { to: 1 })],
        inputs: { x: [2, 3] },
        outputs: ['y'],
        opset: 21,
      });
      expect(() => importOnnx(bytes)).toThrow(UnsupportedOnnxOpError);
      expect(() => importOnnx(bytes)).toThrow(
        `it casts to ${name}; QTK computes in float, double, float16, bool and 8- to 64-bit integers only`,
      );
    }
  });

  it('an int4 initializer (21) and a float8 Constant (19) are refused, naming the type', () => {
    const int4 = opsetModel({
      nodes: [op('Add', ['x', 'w'], ['y'])],
      inputs: { x: [2] },
      outputs: ['y'],
      initializers: [{ name: 'w', dims: [2], data_type: 22, raw_data: Uint8Array.of(0x21) }],
      opset: 21,
    });
    expect(() => importOnnx(int4)).toThrow(
      "initializer 'w': data type int4 is not supported (float, double, float16, bool and 8- to 64-bit integers are)",
    );
    const f8 = { dims: [1], data_type: 17, raw_data: Uint8Array.of(0x38) };
    const constant = opsetModel({
      nodes: [
        { op_type: 'Constant', name: 'c', output: ['c'], attribute: [{ name: 'value', type: 4, t: f8 }] },
        op('Add', ['x', 'c'], ['y']),
      ],
      inputs: { x: [2] },
      outputs: ['y'],
      opset: 19,
    });
    expect(() => importOnnx(constant)).toThrow('data type float8e4m3fn is not supported');
  });

  it('an input of a type QTK does not compute in is refused (before: read as int32)', () => {
    const bytes = opsetModel({
      nodes: [op('Cast', ['x'], ['y'], { to: 1 })],
      inputs: { x: { shape: [2, 3], elem: 16 } },
      outputs: ['y'],
      opset: 21,
    });
    expect(() => importOnnx(bytes)).toThrow(OnnxError);
    expect(() => importOnnx(bytes)).toThrow(
      "importOnnx: input 'x' has element type bfloat16; QTK imports inputs of float, double, float16, bool and 8- to 64-bit integers",
    );
  });
});

describe('Gelu (opset 20)', () => {
  for (const approximate of ['none', 'tanh']) {
    it(`approximate '${approximate}' imports as the GELU module, as onnxruntime`, async () => {
      const r = await compareWithOrt(
        { nodes: [op('Gelu', ['x'], ['y'], { approximate })], inputs: { x: [2, 5, 8] }, outputs: ['y'], opset: 20 },
        { x: x([2, 5, 8]).mul(3) },
      );
      const modules = [...r.gm.graph.nodes].filter((n) => n.op === 'call_module');
      expect(modules).toHaveLength(1);
      const m = r.gm.getSubmodule(String(modules[0]!.target));
      expect(m).toBeInstanceOf(GELU);
      expect((m as GELU).approximate).toBe(approximate);
      expect(r.relError).toBeLessThan(1e-6);
    });
  }

  it('the same graph as the decomposed GELU of opset 17 (one GELU module named after the node)', () => {
    const decomposed = opsetModel({
      nodes: [
        op('Div', ['x', 'sqrt2'], ['d']),
        op('Erf', ['d'], ['e']),
        op('Add', ['e', 'one'], ['p']),
        op('Mul', ['x', 'p'], ['m']),
        op('Mul', ['m', 'half'], ['y']),
      ],
      inputs: { x: [2, 3] },
      outputs: ['y'],
      initializers: [float32s('sqrt2', [Math.SQRT2], []), float32s('one', [1], []), float32s('half', [0.5], [])],
      opset: 17,
    });
    const single = opsetModel({ nodes: [op('Gelu', ['x'], ['y'])], inputs: { x: [2, 3] }, outputs: ['y'], opset: 20 });
    const shape = (bytes: Uint8Array) =>
      [...importOnnx(bytes).graph.nodes].map((n) => [n.op, n.op === 'call_module' ? 'module' : String(n.target)]);
    expect(shape(single)).toEqual(shape(decomposed));
    expect(shape(single)).toEqual([
      ['placeholder', 'x'],
      ['call_module', 'module'],
      ['output', 'output'],
    ]);
  });

  it('an approximation that is not none or tanh is an invalid model', () => {
    const bytes = opsetModel({
      nodes: [op('Gelu', ['x'], ['y'], { approximate: 'erf' })],
      inputs: { x: [2, 3] },
      outputs: ['y'],
      opset: 20,
    });
    expect(() => importOnnx(bytes)).toThrow(
      "importOnnx: Gelu 'Gelu_y': approximate 'erf' is not 'none' or 'tanh'; the model is invalid",
    );
  });
});

describe('opset 21: the type-extended shape ops keep their meaning', () => {
  it('Shape / ConstantOfShape / Equal / Flatten / Transpose / Squeeze / Unsqueeze / Reshape / Identity, as onnxruntime', async () => {
    const r = await compareWithOrt(
      {
        nodes: [
          op('Transpose', ['x'], ['t'], { perm: [0, 2, 1, 3] }),
          op('Unsqueeze', ['t', 'ax0'], ['u']),
          op('Squeeze', ['u', 'ax0'], ['s']),
          op('Flatten', ['s'], ['f'], { axis: 2 }),
          op('Shape', ['f'], ['shape']),
          op('ConstantOfShape', ['shape'], ['ones'], {}),
          op('Equal', ['f', 'ones'], ['eq']),
          op('Cast', ['eq'], ['eqf'], { to: 1 }),
          op('Add', ['f', 'eqf'], ['sum']),
          op('Reshape', ['sum', 'target'], ['r']),
          op('Identity', ['r'], ['y']),
        ],
        inputs: { x: [2, 3, 4, 5] },
        outputs: ['y'],
        initializers: [int64s('ax0', [0]), int64s('target', [0, -1])],
        opset: 21,
      },
      { x: x([2, 3, 4, 5]) },
    );
    expect(r.shapes[0]).toEqual([8, 15]); // [2, 4, 3, 5] flattened from axis 2
    expect(r.relError).toBe(0);
  });
});

describe('operators refused by name', () => {
  const refused = (nodes: ReturnType<typeof op>[], inputs: Record<string, number[]>, opset: number) => {
    let err: unknown;
    try {
      importOnnx(opsetModel({ nodes, inputs, outputs: ['y'], opset }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UnsupportedOnnxOpError);
    return (err as Error).message;
  };

  it('DeformConv (19), GridSample and AffineGrid (20)', () => {
    expect(
      refused([op('DeformConv', ['x', 'w', 'o'], ['y'])], { x: [1, 1, 4, 4], w: [1, 1, 3, 3], o: [1, 18, 2, 2] }, 19),
    ).toContain('DeformConv (opset 19) samples its input at offsets computed from the data');
    expect(refused([op('GridSample', ['x', 'g'], ['y'])], { x: [1, 1, 4, 4], g: [1, 2, 2, 2] }, 20)).toContain(
      'GridSample (opset 16, 20) reads its input at positions computed from the data',
    );
    expect(refused([op('AffineGrid', ['t', 's'], ['y'])], { t: [1, 2, 3], s: [4] }, 20)).toContain(
      'AffineGrid (opset 20) builds a sampling grid for GridSample',
    );
  });

  it('QuantizeLinear / DequantizeLinear, blocked (21) or not', () => {
    expect(
      refused(
        [
          op('QuantizeLinear', ['x', 's'], ['q'], { block_size: 2, axis: 1 }),
          op('DequantizeLinear', ['q', 's'], ['y'], { block_size: 2, axis: 1 }),
        ],
        { x: [2, 4], s: [2, 2] },
        21,
      ),
    ).toContain('blocked quantization (block_size = 2, opset 21) is not supported');
    expect(refused([op('DequantizeLinear', ['x', 's'], ['y'])], { x: [2, 4], s: [1] }, 13)).toContain(
      'QuantizeLinear / DequantizeLinear (a quantized QDQ model) are not imported',
    );
  });
});
