// Imported forms of ops that used to import but not convert (issue 28 §3): each converts on the
// marches whose table claims it, agrees with the fake-quant model and exports bit-exact.
import { describe, expect, it } from 'vitest';
import { DataType, type NodeMsg, type TensorMsg, int64Proto } from '@qtk/onnx';
import { handMadeModel, valueInfo } from '@qtk/onnx/testing';
import { exportAndCompare } from './testing/fixed-models.js';
import { convertImported, runBoth } from './testing/imported-conversion.js';
import { moduleKinds } from './testing/integer-inputs.js';

const MARCHES = ['bayes', 'bernoulli2'] as const;

/** Max |a - b| in units of `step`. */
function maxSteps(a: Float32Array, b: Float32Array, step: number): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!) / step);
  return m;
}

function outputStep(fixedModel: { namedModules(): Iterable<[string, unknown]> }): number {
  for (const [, m] of fixedModel.namedModules()) {
    const s = (m as { outScale?: number }).outScale ?? (m as { config?: { outScale?: number } }).config?.outScale;
    if (typeof s === 'number') return s;
  }
  throw new Error('no output scale');
}

describe('ReduceMean over the spatial axes (ShuffleNetV2 / MnasNet global pool)', () => {
  for (const keepdims of [0, 1])
    for (const opset of [11, 17])
      for (const march of MARCHES)
        it(`${march}, opset ${opset}, keepdims ${keepdims}: converts, within one step of fake quant, bit-exact in onnxruntime`, async () => {
          const node: NodeMsg = {
            op_type: 'ReduceMean',
            name: 'gap',
            input: ['x'],
            output: ['y'],
            attribute: [
              { name: 'axes', type: 7, ints: [2, 3] },
              { name: 'keepdims', type: 2, i: keepdims },
            ],
          };
          const bytes = handMadeModel(
            [node],
            {
              input: [valueInfo('x', ['N', 3, 4, 5])],
              output: [valueInfo('y', keepdims ? ['N', 3, 1, 1] : ['N', 3])],
            },
            opset,
          );
          const c = convertImported(bytes, [2, 3, 4, 5], { march });
          expect(moduleKinds(c.fixed)).toContain('FixedReduce');
          const { fakeQuant, fixed } = runBoth(c);
          expect(fixed.length).toBe(6);
          expect(maxSteps(fixed, fakeQuant, outputStep(c.fixed))).toBeLessThanOrEqual(1);
          const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
          expect(comparison.identical, summary).toBe(true);
        });
});

describe("HardSigmoid with ONNX's alpha / beta", () => {
  const hardSigmoid = (alpha: number, beta: number) =>
    handMadeModel(
      [
        {
          op_type: 'HardSigmoid',
          name: 'hs',
          input: ['x'],
          output: ['y'],
          attribute: [
            { name: 'alpha', type: 1, f: alpha },
            { name: 'beta', type: 1, f: beta },
          ],
        },
      ],
      { input: [valueInfo('x', ['N', 4, 3, 3])], output: [valueInfo('y', ['N', 4, 3, 3])] },
    );

  // paddle2onnx writes 0.2 / 0.5
  for (const [alpha, beta] of [
    [0.2, 0.5],
    [0.25, 0.4],
  ] as const)
    it(`bayes: alpha ${alpha}, beta ${beta} converts to a table of that function, bit-exact in onnxruntime`, async () => {
      const c = convertImported(hardSigmoid(alpha, beta), [2, 4, 3, 3], { march: 'bayes', lo: -4, hi: 4 });
      expect(moduleKinds(c.fixed)).toContain('FixedTableOp');
      const { fakeQuant, fixed } = runBoth(c);
      const step = outputStep(c.fixed);
      expect(maxSteps(fixed, fakeQuant, step)).toBeLessThanOrEqual(1);
      // the function is ONNX's: at x = 2, alpha·x + beta is below 1 (PyTorch's would give 5/6)
      const x = c.input.values() as Float32Array;
      for (let i = 0; i < x.length; i++) {
        const want = Math.min(1, Math.max(0, alpha * x[i]! + beta));
        expect(Math.abs(fixed[i]! - want)).toBeLessThan(3 * step + 0.02);
      }
      const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
      expect(comparison.identical, summary).toBe(true);
    });
});

describe('Pad before AveragePool (DenseNet transitions, paddle2onnx)', () => {
  const padPool = (pads: number[], mode = 'constant') =>
    handMadeModel(
      [
        {
          op_type: 'Pad',
          name: 'pad',
          input: ['x', 'pads'],
          output: ['p'],
          attribute: [{ name: 'mode', type: 3, s: new TextEncoder().encode(mode) }],
        },
        {
          op_type: 'AveragePool',
          name: 'pool',
          input: ['p'],
          output: ['y'],
          attribute: [
            { name: 'kernel_shape', type: 7, ints: [2, 2] },
            { name: 'strides', type: 7, ints: [2, 2] },
          ],
        },
      ],
      {
        input: [valueInfo('x', ['N', 3, 6, 6])],
        output: [valueInfo('y', ['N', 3, 'H', 'W'])],
        initializer: [int64Proto('pads', pads)],
      },
    );

  for (const march of MARCHES)
    for (const pads of [
      [0, 0, 0, 0, 0, 0, 0, 0],
      [0, 0, 1, 1, 0, 0, 1, 1],
    ])
      it(`${march}: zero Pad [${pads.join(', ')}] then AveragePool converts, within one step of fake quant, bit-exact in onnxruntime`, async () => {
        const c = convertImported(padPool(pads), [2, 3, 6, 6], { march });
        expect(moduleKinds(c.fixed)).toEqual(expect.arrayContaining(['FixedValueOp', 'FixedAvgPool2d']));
        const { fakeQuant, fixed } = runBoth(c);
        expect(fixed.length).toBe(pads[2] ? 2 * 3 * 4 * 4 : 2 * 3 * 3 * 3);
        expect(maxSteps(fixed, fakeQuant, outputStep(c.fixed))).toBeLessThanOrEqual(1);
        const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
        expect(comparison.identical, summary).toBe(true);
      });

  it("bayes: a 'reflect' Pad is refused with the table's mode constraint, not 'no conversion rule'", () => {
    expect(() =>
      convertImported(padPool([0, 0, 1, 1, 0, 0, 1, 1], 'reflect'), [2, 3, 6, 6], { march: 'bayes' }),
    ).toThrow(/pad: onnx\.pad \(Pad\) \(.*mode.*reflect/);
  });
});

describe('BatchNormalization after no conv (ConvTranspose + Add in a detection neck)', () => {
  const f32 = (name: string, dims: number[], values: number[]): TensorMsg => ({
    name,
    dims,
    data_type: DataType.FLOAT,
    raw_data: new Uint8Array(Float32Array.from(values).buffer),
  });
  const bytes = handMadeModel(
    [
      { op_type: 'ConvTranspose', name: 'up', input: ['x', 'w'], output: ['u'] },
      { op_type: 'Add', name: 'add', input: ['u', 'x'], output: ['s'] },
      { op_type: 'BatchNormalization', name: 'bn', input: ['s', 'g', 'b', 'm', 'v'], output: ['y'] },
    ],
    {
      input: [valueInfo('x', ['N', 3, 4, 4])],
      output: [valueInfo('y', ['N', 3, 4, 4])],
      initializer: [
        f32('w', [3, 3, 1, 1], [0.5, -0.2, 0.1, 0.3, 0.8, -0.4, -0.1, 0.2, 0.6]),
        f32('g', [3], [1.5, -0.5, 2]),
        f32('b', [3], [0.1, 0.2, -0.3]),
        f32('m', [3], [0.05, -0.1, 0.2]),
        f32('v', [3], [0.9, 1.2, 0.5]),
      ],
    },
  );

  for (const march of MARCHES)
    it(`${march}: converts as a depthwise 1×1 conv, within one step of fake quant, bit-exact in onnxruntime`, async () => {
      const c = convertImported(bytes, [2, 3, 4, 4], { march });
      const bn = c.fixed.getSubmodule('bn');
      expect(bn.constructor.name).toBe('FixedConv');
      expect((bn as unknown as { config: { attrs: { groups: number } } }).config.attrs.groups).toBe(3);
      const { fakeQuant, fixed } = runBoth(c);
      const step = (bn as unknown as { config: { outScale: Float32Array } }).config.outScale[0]!;
      expect(maxSteps(fixed, fakeQuant, step)).toBeLessThanOrEqual(1);
      const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
      expect(comparison.identical, summary).toBe(true);
    });
});

describe('bayes: the imported ops its table claims (Tile, Sin, Cos, Erf) convert', () => {
  it('Tile (repeats [1, 2, 1, 3]) converts as a value op: equal to fake quant, bit-exact in onnxruntime', async () => {
    const repeats: TensorMsg = int64Proto('reps', [1, 2, 1, 3]);
    const bytes = handMadeModel([{ op_type: 'Tile', name: 'tile', input: ['x', 'reps'], output: ['y'] }], {
      input: [valueInfo('x', ['N', 2, 3, 2])],
      output: [valueInfo('y', ['N', 4, 3, 6])],
      initializer: [repeats],
    });
    const c = convertImported(bytes, [2, 2, 3, 2], { march: 'bayes' });
    expect(moduleKinds(c.fixed)).toContain('FixedValueOp');
    const { fakeQuant, fixed } = runBoth(c);
    expect(fixed.length).toBe(2 * 4 * 3 * 6);
    expect(Array.from(fixed)).toEqual(Array.from(fakeQuant));
    const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
    expect(comparison.identical, summary).toBe(true);
  });

  for (const op of ['Sin', 'Cos', 'Erf'])
    it(`${op} converts to a table: within one step of fake quant, bit-exact in onnxruntime`, async () => {
      const bytes = handMadeModel([{ op_type: op, name: op.toLowerCase(), input: ['x'], output: ['y'] }], {
        input: [valueInfo('x', ['N', 4, 3, 3])],
        output: [valueInfo('y', ['N', 4, 3, 3])],
      });
      const c = convertImported(bytes, [2, 4, 3, 3], { march: 'bayes', lo: -3, hi: 3 });
      expect(moduleKinds(c.fixed)).toContain('FixedTableOp');
      const { fakeQuant, fixed } = runBoth(c);
      expect(maxSteps(fixed, fakeQuant, outputStep(c.fixed))).toBeLessThanOrEqual(1);
      const { comparison, summary } = await exportAndCompare(c.fixed, c.input);
      expect(comparison.identical, summary).toBe(true);
    });
});
