import { describe, expect, it } from 'vitest';
import { RegistryError, UnknownOpError } from '../errors.js';
import { tensor } from '../index.js';
import { defineOp, getOp, hasOp, listOps, opOfModule } from './op-catalog.js';
import { implementationsOf, opOfFunction, opOfMethod, registerFunctionOp, registerModuleOp } from './op-catalog.js';

/**
 * The traced names (functions and Tensor methods of @qtk/tensor) whose output QTK's prepare has
 * always given its own activation scale; the catalog's `ownOutputScale` must reproduce exactly these.
 */
const OWN_SCALE_CALLS = [
  // arithmetic, joins and reductions
  ...['add', 'sub', 'mul', 'div', 'cat', 'matmul', 'mean', 'sum'],
  // elementwise math
  ...['sigmoid', 'tanh', 'softmax', 'exp', 'log', 'sqrt', 'rsqrt', 'reciprocal', 'pow'],
  // pooling and resampling
  ...['avgPool2d', 'adaptiveAvgPool2d', 'interpolate'],
  // activations
  ...['gelu', 'silu', 'hardsigmoid', 'hardswish', 'softplus', 'elu', 'leakyRelu', 'prelu'],
  // layers
  ...['layerNorm', 'linear', 'conv1d', 'conv2d', 'conv3d', 'convTranspose1d', 'convTranspose2d', 'batchNorm'],
  // extrema, erf and trigonometry
  ...['maximum', 'minimum', 'erf', 'sin', 'cos'],
];

describe('op catalog', () => {
  it('defines each op once, by its ONNX name, with its attributes, output scale and fusion roles', () => {
    const names = listOps().map((o) => o.name);
    expect(new Set(names).size).toBe(names.length);
    expect(getOp('Conv')).toEqual({
      name: 'Conv',
      ownOutputScale: true,
      attributes: ['spatialDims', 'kernelShape', 'stride', 'padding', 'dilation', 'groups'],
      fusionRoles: ['base'],
    });
    expect(getOp('Relu')).toMatchObject({ ownOutputScale: false, fusionRoles: ['activation'] });
    expect(getOp('BatchNormalization').fusionRoles).toEqual(['bn']);
    expect(getOp('Add').fusionRoles).toEqual(['add']);
    expect(
      listOps()
        .filter((o) => o.fusionRoles.includes('base'))
        .map((o) => o.name),
    ).toEqual(['Conv', 'ConvTranspose', 'Gemm']);
  });

  it('an unknown op is an UnknownOpError naming it and the close catalog ops', () => {
    const e = (() => {
      try {
        getOp('Relu6', 'capability table');
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(UnknownOpError.isInstance(e)).toBe(true);
    expect((e as UnknownOpError).op).toBe('Relu6');
    expect((e as UnknownOpError).suggestions[0]).toBe('Relu');
    expect((e as Error).message).toMatch(
      /^capability table: op 'Relu6' is not in QTK's op catalog \(close names: Relu/,
    );
    expect(() => getOp('conv')).toThrow(/close names: Conv\b/);
    expect(() => getOp('ReduceAverage')).toThrow(UnknownOpError);
    expect(hasOp('Conv')).toBe(true);
    expect(hasOp('conv')).toBe(false);
  });

  it("maps @qtk/tensor's traced functions and Tensor methods to ops", () => {
    expect(opOfFunction('add')).toEqual({ op: 'Add', attrs: {}, ownOutputScale: true, fused: null });
    expect(opOfFunction('cat')?.op).toBe('Concat');
    expect(opOfMethod('cat')).toBeNull(); // no Tensor.cat
    expect(opOfMethod('view')?.op).toBe('Reshape');
    expect(opOfFunction('view')).toBeNull(); // no traced view function
    expect(opOfFunction('linear')?.op).toBe('Gemm');
    expect(opOfFunction('conv3d')?.attrs).toEqual({ spatialDims: 3 });
    expect(opOfFunction('relu6')).toMatchObject({ op: 'Clip', attrs: { min: 0, max: 6 }, ownOutputScale: false });
    expect(opOfMethod('sum', { args: [null, [1]] })).toMatchObject({ op: 'ReduceSum', attrs: { axes: [1] } });
    const x = tensor([1, 2]);
    expect(opOfFunction('interpolate', { args: [x, { mode: 'bilinear' }] })?.attrs).toEqual({ mode: 'bilinear' });
    expect(opOfFunction('interpolate', { args: [x, { size: [4, 4] }] })?.attrs).toEqual({ mode: 'nearest' });
    expect(opOfFunction('pad', { args: [x, [1, 1]] })?.attrs).toEqual({ mode: 'constant' });
    expect(opOfFunction('randn')).toBeNull();
    expect(opOfFunction('no such function')).toBeNull();
  });

  it("reproduces prepare's choice of which traced calls get their own output scale", () => {
    const traced = [...new Set([...implementationsOfAll('functions'), ...implementationsOfAll('methods')])].sort();
    const own = traced.filter((n) => (opOfFunction(n) ?? opOfMethod(n))!.ownOutputScale);
    expect(own).toEqual([...OWN_SCALE_CALLS].sort());
    // a function and a method of one name agree
    for (const n of traced) {
      const f = opOfFunction(n);
      const m = opOfMethod(n);
      if (f && m) expect([n, f.op, f.ownOutputScale]).toEqual([n, m.op, m.ownOutputScale]);
    }
    expect(opOfFunction('resize')).toMatchObject({ op: 'Resize', ownOutputScale: false });
    expect(opOfFunction('max')).toMatchObject({ op: 'ReduceMax', ownOutputScale: false });
  });

  it('registrations name catalog ops; defineOp adds an op once', () => {
    expect(() => registerFunctionOp({ name: 'catalogTest.f', op: 'Convolution' })).toThrow(UnknownOpError);
    class Custom {}
    expect(() => registerModuleOp({ cls: Custom, op: 'Gemm', methods: { go: 'Goo' } })).toThrow(/op 'Goo'/);
    expect(opOfModule(new Custom())).toBeNull();
    const def = defineOp({ name: 'CatalogTestOp', ownOutputScale: true, attributes: ['k'] });
    expect(getOp('CatalogTestOp')).toBe(def);
    expect(() => defineOp({ name: 'CatalogTestOp', ownOutputScale: false })).toThrow(RegistryError);
    registerModuleOp<Custom & { k?: number }>({ cls: Custom, op: 'CatalogTestOp', attrs: (m) => ({ k: m.k ?? 3 }) });
    class Sub extends Custom {}
    expect(opOfModule(new Sub())).toEqual({ op: 'CatalogTestOp', attrs: { k: 3 }, ownOutputScale: true, fused: null });
    expect(implementationsOf('CatalogTestOp').modules).toEqual([Custom]);
    expect(() => registerModuleOp({ cls: Custom, op: 'Gemm' })).toThrow(RegistryError);
    // a method table answers for its own entries only, not for Object.prototype's names
    class WithMethods {}
    registerModuleOp({ cls: WithMethods, op: () => null, methods: { plus: 'Add' } });
    expect(opOfModule(new WithMethods(), 'plus')).toMatchObject({ op: 'Add' });
    expect(opOfModule(new WithMethods(), 'constructor')).toBeNull();
    expect(opOfModule(new WithMethods(), 'toString')).toBeNull();
  });
});

function implementationsOfAll(kind: 'functions' | 'methods'): string[] {
  return listOps().flatMap((o) => implementationsOf(o.name)[kind]);
}
