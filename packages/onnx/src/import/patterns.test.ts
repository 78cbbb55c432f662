// Decomposed GELU, LayerNorm, SiLU and HardSwish, as exporters write them, import as the module a march
// converts; a near miss (another constant, a value read outside the pattern) stays the decomposed ops.
import { GELU, LayerNorm } from '@qtk/nn';
import { gelu, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { importOnnx } from '../index.js';
import type { NodeMsg, TensorMsg } from '../onnx-schema.js';
import {
  exampleInput,
  floats,
  node,
  opsOf,
  patternModel,
  relativeError,
  runtimeOutput,
} from '../testing/pattern-models.js';

const SQRT2 = floats('sqrt2', [Math.SQRT2]);
const ONE = floats('one', [1]);
const HALF = floats('half', [0.5]);

/** Imports the model, checks its ops, and its output against onnxruntime-node's within 1e-4 relative. */
async function imported(bytes: Uint8Array, ops: string[], x: Tensor = exampleInput()) {
  const gm = importOnnx(bytes);
  expect(opsOf(gm)).toEqual(ops);
  const y = gm.call(x) as Tensor;
  expect(relativeError(y.values() as Float32Array, await runtimeOutput(bytes, x))).toBeLessThan(1e-4);
  return { gm, y };
}

const moduleOf = (gm: ReturnType<typeof importOnnx>, i: number) =>
  gm.getSubmodule(String([...gm.graph.nodes].filter((n) => n.op === 'call_module')[i]!.target));

describe('GELU from Erf', () => {
  const erfThenOnePlus = (scale: NodeMsg): NodeMsg[] => [
    scale,
    node('Erf', ['d'], 'e'),
    node('Add', ['e', 'one'], 'p'),
  ];

  it("PyTorch's form, (x · (1 + erf(x / √2))) · ½, is one GELU named after the first node, equal to gelu(x)", async () => {
    const nodes = [
      ...erfThenOnePlus(node('Div', ['x', 'sqrt2'], 'd')),
      node('Mul', ['x', 'p'], 'm'),
      node('Mul', ['m', 'half'], 'y'),
    ];
    const x = exampleInput();
    const { gm, y } = await imported(patternModel(nodes, [SQRT2, ONE, HALF]), ['Gelu'], x);
    expect(moduleOf(gm, 0)).toBeInstanceOf(GELU);
    expect((moduleOf(gm, 0) as GELU).approximate).toBe('none');
    expect([...gm.graph.nodes].find((n) => n.op === 'call_module')!.name).toBe('block_Div_d');
    expect(relativeError(y.values() as Float32Array, gelu(x).values() as Float32Array)).toBeLessThan(1e-6);
  });

  it('(x · ½) · (1 + erf(x · 1/√2)), with the constants first, is one GELU', async () => {
    const nodes = [
      node('Mul', ['half', 'x'], 'h'),
      node('Mul', ['x', 'rsqrt2'], 'd'),
      node('Erf', ['d'], 'e'),
      node('Add', ['one', 'e'], 'p'),
      node('Mul', ['h', 'p'], 'y'),
    ];
    await imported(patternModel(nodes, [floats('rsqrt2', [Math.SQRT1_2]), ONE, HALF]), ['Gelu']);
  });

  it('x · ((1 + erf(x / √2)) · ½) is one GELU', async () => {
    const nodes = [
      ...erfThenOnePlus(node('Div', ['x', 'sqrt2'], 'd')),
      node('Mul', ['p', 'half'], 'm'),
      node('Mul', ['x', 'm'], 'y'),
    ];
    await imported(patternModel(nodes, [SQRT2, ONE, HALF]), ['Gelu']);
  });

  it("PyTorch's tanh approximation is one GELU({ approximate: 'tanh' })", async () => {
    const nodes = [
      node('Pow', ['x', 'three'], 'c'),
      node('Mul', ['kappa', 'c'], 'k'),
      node('Add', ['x', 'k'], 's'),
      node('Mul', ['beta', 's'], 'd'),
      node('Tanh', ['d'], 't'),
      node('Add', ['one', 't'], 'p'),
      node('Mul', ['x', 'half'], 'h'),
      node('Mul', ['h', 'p'], 'y'),
    ];
    const init = [
      floats('three', [3]),
      floats('kappa', [0.044715]),
      floats('beta', [Math.sqrt(2 / Math.PI)]),
      ONE,
      HALF,
    ];
    const x = exampleInput();
    const { gm, y } = await imported(patternModel(nodes, init), ['Gelu'], x);
    expect((moduleOf(gm, 0) as GELU).approximate).toBe('tanh');
    expect(
      relativeError(y.values() as Float32Array, gelu(x, { approximate: 'tanh' }).values() as Float32Array),
    ).toBeLessThan(1e-6);
  });

  it('a divisor other than √2 stays Div / Erf / Add / Mul / Mul, and still imports', async () => {
    const nodes = [
      ...erfThenOnePlus(node('Div', ['x', 'sqrt2'], 'd')),
      node('Mul', ['x', 'p'], 'm'),
      node('Mul', ['m', 'half'], 'y'),
    ];
    await imported(patternModel(nodes, [floats('sqrt2', [1.5]), ONE, HALF]), ['Div', 'Erf', 'Add', 'Mul', 'Mul']);
  });

  it('an Erf whose value is also a graph output stays decomposed', async () => {
    const nodes = [
      ...erfThenOnePlus(node('Div', ['x', 'sqrt2'], 'd')),
      node('Mul', ['x', 'p'], 'm'),
      node('Mul', ['m', 'half'], 'y'),
    ];
    const gm = importOnnx(patternModel(nodes, [SQRT2, ONE, HALF], { extraOutputs: ['e'] }));
    expect(opsOf(gm)).toEqual(['Div', 'Erf', 'Add', 'Mul', 'Mul']);
  });
});

/** LayerNorm as PyTorch ≤ opset 16 exports it, over ReduceMean `axes`, with γ / β when given. */
function layerNormNodes(axes: number[], affine: boolean): NodeMsg[] {
  const ints = { axes };
  return [
    node('ReduceMean', ['x'], 'mu', { ints }),
    node('Sub', ['x', 'mu'], 'c'),
    node('Pow', ['c', 'two'], 'sq'),
    node('ReduceMean', ['sq'], 'var', { ints }),
    node('Add', ['var', 'eps'], 've'),
    node('Sqrt', ['ve'], 'sd'),
    node('Div', ['c', 'sd'], affine ? 'n' : 'y'),
    ...(affine ? [node('Mul', ['n', 'gamma'], 'g'), node('Add', ['g', 'beta'], 'y')] : []),
  ];
}

const GAMMA = Array.from({ length: 8 }, (_, i) => 0.5 + i / 8);
const BETA = Array.from({ length: 8 }, (_, i) => i / 10 - 0.3);
const LN_INIT: TensorMsg[] = [floats('two', [2]), floats('eps', [1e-6]), floats('gamma', GAMMA), floats('beta', BETA)];

describe('LayerNorm from ReduceMean / Sub / Pow / ReduceMean / Add / Sqrt / Div / Mul / Add', () => {
  it('over the last axis is one LayerNorm([8]) with γ, β and ε from the graph', async () => {
    const { gm } = await imported(patternModel(layerNormNodes([-1], true), LN_INIT), ['LayerNormalization']);
    const ln = moduleOf(gm, 0) as LayerNorm;
    expect(ln).toBeInstanceOf(LayerNorm);
    expect([ln.normalizedShape, ln.eps]).toEqual([[8], Math.fround(1e-6)]);
    expect(Array.from(ln.weight!.values())).toEqual(Array.from(Float32Array.from(GAMMA)));
    expect(Array.from(ln.bias!.values())).toEqual(Array.from(Float32Array.from(BETA)));
  });

  it('without γ and β is a LayerNorm without affine parameters; axis 2 of a rank-3 input is the last axis too', async () => {
    const { gm } = await imported(patternModel(layerNormNodes([2], false), LN_INIT), ['LayerNormalization']);
    const ln = moduleOf(gm, 0) as LayerNorm;
    expect([ln.elementwiseAffine, ln.weight, ln.bias]).toEqual([false, null, null]);
  });

  it('over a middle axis stays the decomposed ops', async () => {
    await imported(patternModel(layerNormNodes([1], true), LN_INIT), [
      'ReduceMean',
      'Sub',
      'Pow',
      'ReduceMean',
      'Add',
      'Sqrt',
      'Div',
      'Mul',
      'Add',
    ]);
  });

  it('with the centred value read outside the pattern stays the decomposed ops', () => {
    const gm = importOnnx(patternModel(layerNormNodes([-1], true), LN_INIT, { extraOutputs: ['c'] }));
    expect(opsOf(gm)).toContain('ReduceMean');
  });
});

describe('SiLU and HardSwish', () => {
  it('x · Sigmoid(x) is one SiLU; Sigmoid(x) · x² is not', async () => {
    await imported(patternModel([node('Sigmoid', ['x'], 's'), node('Mul', ['s', 'x'], 'y')], []), ['Silu']);
    const gate = [node('Sigmoid', ['x'], 's'), node('Mul', ['x', 'x'], 'q'), node('Mul', ['s', 'q'], 'y')];
    await imported(patternModel(gate, []), ['Sigmoid', 'Mul', 'Mul']);
  });

  it("x · HardSigmoid(x) is one Hardswish with PyTorch's α = 1/6, β = ½ only", async () => {
    const hs = (alpha: number) => [
      node('HardSigmoid', ['x'], 'h', { f: { alpha, beta: 0.5 } }),
      node('Mul', ['x', 'h'], 'y'),
    ];
    await imported(patternModel(hs(1 / 6), []), ['HardSwish']);
    await imported(patternModel(hs(0.2), []), ['HardSigmoid', 'Mul']);
  });

  it('x · Relu6(x + 3) / 6 is one Hardswish, in both orders, with Clip bounds as inputs or attributes', async () => {
    const init = [floats('three', [3]), floats('zero', [0]), floats('six', [6]), floats('sixth', [1 / 6])];
    const thenDivide = [
      node('Add', ['x', 'three'], 'a'),
      node('Clip', ['a', 'zero', 'six'], 'r'),
      node('Mul', ['x', 'r'], 'm'),
      node('Div', ['m', 'six'], 'y'),
    ];
    await imported(patternModel(thenDivide, init), ['HardSwish']);
    const divideFirst = [
      node('Add', ['three', 'x'], 'a'),
      node('Clip', ['a', 'zero', 'six'], 'r'),
      node('Mul', ['r', 'sixth'], 'd'),
      node('Mul', ['d', 'x'], 'y'),
    ];
    await imported(patternModel(divideFirst, init), ['HardSwish']);
    const opset10 = [
      node('Add', ['x', 'three'], 'a'),
      node('Clip', ['a'], 'r', { f: { min: 0, max: 6 } }),
      node('Mul', ['x', 'r'], 'm'),
      node('Div', ['m', 'six'], 'y'),
    ];
    await imported(patternModel(opset10, init, { opset: 10 }), ['HardSwish']);
    const relu5 = thenDivide.map((n) => (n.op_type === 'Clip' ? node('Clip', ['a', 'zero', 'three'], 'r') : n));
    await imported(patternModel(relu5, init), ['Add', 'Clip', 'Mul', 'Div']);
  });
});
