// Every error class the QTK packages export has its own static code, and QtkError.isInstance
// agrees with instanceof even for an error made by another installed copy of a package (which
// the CLI relies on to tell QTK's errors from crashes).
import * as core from '@qtk/core';
import * as fakeQuant from '@qtk/fake-quant';
import * as fixedPoint from '@qtk/fixed-point';
import * as ir from '@qtk/ir';
import * as nn from '@qtk/nn';
import * as onnx from '@qtk/onnx';
import * as spec from '@qtk/spec';
import * as tensor from '@qtk/tensor';
import { describe, expect, it } from 'vitest';

type ErrorClass = (abstract new (...args: never[]) => tensor.QtkError) & typeof tensor.QtkError & { code?: string };

const PACKAGES: Record<string, Record<string, unknown>> = { tensor, spec, ir, nn, onnx, core, fakeQuant, fixedPoint };

function errorClassesOf(exports: Record<string, unknown>): ErrorClass[] {
  return Object.values(exports).filter(
    (v): v is ErrorClass => typeof v === 'function' && v.prototype instanceof tensor.QtkError,
  );
}

const unsupported = new spec.UnsupportedOpError({ op: 'Foo', node: 'foo', march: 'bayes', reason: 'r' });

/** One instance per error class (constructors differ); a class missing here fails the walk below. */
const MAKE: Record<string, () => tensor.QtkError> = {
  ShapeError: () => new tensor.ShapeError('s'),
  DTypeError: () => new tensor.DTypeError('d'),
  InvalidArgumentError: () => new tensor.InvalidArgumentError('a'),
  KernelNotFoundError: () => new tensor.KernelNotFoundError('op', []),
  AutogradError: () => new tensor.AutogradError('g'),
  RegistryError: () => new tensor.RegistryError('thing', 'k', 'm'),
  UnknownOpError: () => new tensor.UnknownOpError('Foo', ['Floor'], 'here'),
  UnsupportedOpError: () => unsupported,
  QConfigError: () => new spec.QConfigError('q'),
  OptionsError: () => new spec.OptionsError('where', [{ path: 'a', message: 'b' }]),
  StateVersionError: () => new spec.StateVersionError('v'),
  PluginContractError: () => new spec.PluginContractError('p'),
  ObserverStateError: () => new spec.ObserverStateError('o'),
  TraceError: () => new ir.TraceError('t', { modulePath: '', moduleType: 'Net', location: null }),
  GraphError: () => new ir.GraphError('g'),
  GraphValidationError: () => new ir.GraphValidationError(['p']),
  SerializationError: () => new ir.SerializationError('s'),
  ModuleConfigError: () => new ir.ModuleConfigError('a', 'Conv2d', 'f', 'bad'),
  PatternError: () => new ir.PatternError('p'),
  SplitModelError: () => new ir.SplitModelError('s', 'node'),
  StateDictError: () => new nn.StateDictError({ missingKeys: ['w'] }),
  DataFormatError: () => new nn.DataFormatError('d'),
  CompressedDataError: () => new nn.CompressedDataError('the bytes'),
  DatasetNotFoundError: () => new nn.DatasetNotFoundError('d', '/x'),
  WriteTargetError: () => new nn.WriteTargetError('/x', 'a directory'),
  NonfiniteGradientError: () => new nn.NonfiniteGradientError(Number.NaN, 2, [0]),
  OnnxError: () => new onnx.OnnxError('o'),
  OnnxFormatError: () => new onnx.OnnxFormatError('f'),
  OnnxLimitError: () => new onnx.OnnxLimitError('l'),
  OnnxExternalDataError: () => new onnx.OnnxExternalDataError('e'),
  RuntimeRunError: () => new onnx.RuntimeRunError('e'),
  UnsupportedOnnxOpError: () =>
    new onnx.UnsupportedOnnxOpError([{ name: 'n', opType: 'Foo', domain: '', opset: 13, reason: 'r' }]),
  OnnxInputShapeError: () => new onnx.OnnxInputShapeError('i'),
  OnnxAttributeError: () => new onnx.OnnxAttributeError('n', 'Gemm', 'alpha', 'NaN'),
  OnnxExportError: () => new onnx.OnnxExportError('x'),
  ConversionError: () => new core.ConversionError('bayes', [unsupported]),
  ModelFileError: () => new core.ModelFileError('m', '/x'),
  SensitivityTableError: () => new core.SensitivityTableError('t', ['n']),
  UnknownModuleNameError: () => new core.UnknownModuleNameError('qconfigDict.moduleName', 'fc1', ['fc']),
};

/** The same error as another installed copy would make it: a parallel class chain with the same static codes and the brand. */
function fromOtherCopy(e: tensor.QtkError): Error {
  const chain: ErrorClass[] = [];
  for (let c = e.constructor as ErrorClass; c !== tensor.QtkError; c = Object.getPrototypeOf(c)) chain.unshift(c);
  let mirror: new () => Error = class OtherQtkError extends Error {};
  Object.defineProperty(mirror.prototype, Symbol.for('qtk.error'), { value: true });
  for (const c of chain) {
    mirror = class extends mirror {};
    if (Object.hasOwn(c, 'code')) Object.defineProperty(mirror, 'code', { value: c.code });
  }
  return Object.assign(new mirror(), { code: e.code });
}

const classes = Object.entries(PACKAGES).flatMap(([pkg, exports]) =>
  errorClassesOf(exports).map((cls) => ({ pkg, cls })),
);
// spec re-exports tensor's QtkError and RegistryError: one entry per class
const unique = [...new Map(classes.map((c) => [c.cls, c])).values()];

describe('the error classes QTK exports', () => {
  it('are all known to this test (a new class needs an entry in MAKE)', () => {
    expect(unique.length).toBeGreaterThanOrEqual(Object.keys(MAKE).length);
    expect(unique.map(({ cls }) => cls.name).filter((n) => !MAKE[n])).toEqual([]);
  });

  it('each declares its own static code, equal to the code of its instances, and no two share one', () => {
    for (const { pkg, cls } of unique) {
      expect(Object.hasOwn(cls, 'code'), `${pkg}'s ${cls.name} has no own static code`).toBe(true);
      const e = MAKE[cls.name]!();
      expect(e).toBeInstanceOf(cls);
      expect([cls.name, e.code]).toEqual([cls.name, (cls as unknown as { code: string }).code]);
      expect(e.name).toBe(cls.name);
    }
    const codes = unique.map(({ cls }) => (cls as unknown as { code: string }).code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('isInstance agrees with instanceof for every pair, also for errors from another copy of a package', () => {
    const errors = unique.map(({ cls }) => MAKE[cls.name]!());
    let siblings = 0;
    for (const { cls } of unique) {
      for (const e of errors) {
        const want = (e as unknown) instanceof cls;
        expect([cls.name, e.name, cls.isInstance(e)]).toEqual([cls.name, e.name, want]);
        const other = fromOtherCopy(e);
        expect(other instanceof cls).toBe(false);
        expect([cls.name, e.name, cls.isInstance(other)]).toEqual([cls.name, e.name, want]);
        if (!want && Object.getPrototypeOf((e as Error).constructor) === Object.getPrototypeOf(cls)) siblings++;
      }
    }
    // siblings under one parent (OnnxFormatError vs OnnxLimitError, ModuleConfigError vs ModelFileError) were among them
    expect(onnx.OnnxFormatError.isInstance(fromOtherCopy(new onnx.OnnxLimitError('l')))).toBe(false);
    expect(onnx.OnnxError.isInstance(fromOtherCopy(new onnx.OnnxLimitError('l')))).toBe(true);
    expect(ir.SerializationError.isInstance(fromOtherCopy(new core.ModelFileError('m')))).toBe(true);
    expect(ir.ModuleConfigError.isInstance(fromOtherCopy(new core.ModelFileError('m')))).toBe(false);
    expect(siblings).toBeGreaterThan(100);
  });
});
