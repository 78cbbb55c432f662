import { describe, expect, it } from 'vitest';
import { OptionsError, QConfigError, UnknownOpError, UnsupportedOpError } from './errors.js';
import { assertActivationDtype, checkOpSupport, defineCapabilities, type MarchBackendV1 } from './march-backend.js';
import { observerBaseOptionsSchema } from './observer.js';
import { parseOptions } from './options.js';
import { marches } from './registries.js';

const table = defineCapabilities({
  version: 1,
  activationDtypes: ['qint8'],
  weightDtypes: ['qint8'],
  weightPerChannel: true,
  ops: [
    { op: 'Conv', impl: 'integer', fusable: ['BatchNormalization', 'Add', 'Relu'] },
    { op: 'AveragePool', constraints: [{ kind: 'max', attr: 'kernelSize', value: 7 }] },
    { op: 'Resize', constraints: [{ kind: 'oneOf', attr: 'mode', values: ['nearest', 'linear'] }] },
    { op: 'Softmax', dtypes: ['qint16'] },
  ],
});
const march: MarchBackendV1 = { apiVersion: 1, id: 'toy', capabilities: table, hooks: {} };

describe('capability tables', () => {
  it('answers from data', () => {
    expect(checkOpSupport(table, { op: 'Conv', dtype: 'qint8' }).ok).toBe(true);
    expect(checkOpSupport(table, { op: 'Conv', dtype: 'qint16' })).toEqual({
      ok: false,
      reason: 'dtype qint16 not supported (supported: qint8)',
    });
    expect(checkOpSupport(table, { op: 'Erf' })).toMatchObject({
      ok: false,
      reason: "op 'Erf' is not in the capability table",
    });
    expect(checkOpSupport(table, { op: 'AveragePool', attrs: { kernelSize: [7, 7] } }).ok).toBe(true);
    expect(checkOpSupport(table, { op: 'AveragePool', attrs: { kernelSize: [3, 9] } })).toMatchObject({ ok: false });
    expect(checkOpSupport(table, { op: 'Resize', attrs: { mode: 'cubic' } })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/one of nearest, linear/),
    });
    expect(checkOpSupport(table, { op: 'Softmax', dtype: 'qint16' }).ok).toBe(true);
    expect(table.highPrecisionOutputDtypes).toEqual(['qint32']);
  });
  it('invalid tables fail with a zod path', () => {
    expect(() =>
      defineCapabilities({
        version: 1,
        activationDtypes: ['qint9' as 'qint8'],
        weightDtypes: ['qint8'],
        weightPerChannel: true,
        ops: [],
      }),
    ).toThrow(/activationDtypes\.0/);
  });
  it('a table naming an op the op catalog does not know fails at definition, naming the op and close ones', () => {
    const define = (op: string) => () =>
      defineCapabilities({
        version: 1,
        activationDtypes: ['qint8'],
        weightDtypes: ['qint8'],
        weightPerChannel: true,
        ops: [{ op: 'Conv' }, { op }],
      });
    let thrown: unknown = null;
    try {
      define('Sigmiod')();
    } catch (e) {
      thrown = e;
    }
    expect(UnknownOpError.isInstance(thrown)).toBe(true);
    expect((thrown as UnknownOpError).op).toBe('Sigmiod');
    expect((thrown as UnknownOpError).suggestions).toContain('Sigmoid');
    expect((thrown as Error).message).toMatch(
      /^capability table: op 'Sigmiod' is not in QTK's op catalog \(close names: Sigmoid/,
    );
    expect(define('ReLU')).toThrow(/close names: Relu\b/);
    expect(define('MaxPool2d')).toThrow(/close names: MaxPool\b/);
    // a table built without defineCapabilities is checked when the march registers
    const raw = { ...table, ops: [...table.ops, { op: 'Conv2d', constraints: [] }] };
    expect(() => marches.register({ apiVersion: 1, id: 'catalog-test', capabilities: raw, hooks: {} })).toThrow(
      /march 'catalog-test': capability table: op 'Conv2d' is not in QTK's op catalog \(close names: Conv\b/,
    );
    expect(marches.has('catalog-test')).toBe(false);
    // fusable parts are catalog ops too: a fused ReLU6 is a Clip
    const fusing = (part: string) => () =>
      defineCapabilities({ ...table, ops: [{ op: 'Conv', fusable: ['BatchNormalization', part] }] });
    expect(fusing('Clip')).not.toThrow();
    expect(fusing('Relu6')).toThrow(/op 'Relu6' is not in QTK's op catalog \(close names: Relu\b/);
  });
  it('activation dtype checks name the module', () => {
    expect(() => assertActivationDtype(march, 'qint16', 'backbone.conv1')).toThrow(QConfigError);
    expect(() => assertActivationDtype(march, 'qint16', 'backbone.conv1')).toThrow(
      /module 'backbone.conv1'.*no qint16/,
    );
    assertActivationDtype(march, 'qint8');
  });
});

describe('errors and options', () => {
  it('UnsupportedOpError carries its context', () => {
    const e = new UnsupportedOpError({ op: 'Erf', node: 'erf_1', march: 'bernoulli2' });
    expect([e.op, e.node, e.march, e.code, e.name]).toEqual([
      'Erf',
      'erf_1',
      'bernoulli2',
      'E_UNSUPPORTED_OP',
      'UnsupportedOpError',
    ]);
    expect(e.message).toMatch(/hybrid/);
  });
  it('observer options: defaults, qscheme from chAxis, paths in errors', () => {
    expect(parseOptions(observerBaseOptionsSchema, {}, 'observer')).toEqual({
      dtype: 'qint8',
      chAxis: -1,
      qscheme: 'per_tensor_symmetric',
      quantMin: null,
      quantMax: null,
      reduceRange: false,
      isSyncQuantize: false,
    });
    expect(parseOptions(observerBaseOptionsSchema, { chAxis: 0 }, 'observer').qscheme).toBe('per_channel_symmetric');
    expect(() =>
      parseOptions(observerBaseOptionsSchema, { chAxis: 0, qscheme: 'per_tensor_symmetric' }, 'observer'),
    ).toThrow(/qscheme: per_tensor_symmetric needs chAxis -1/);
    expect(() => parseOptions(observerBaseOptionsSchema, { dtype: 'qint32' }, 'min_max')).toThrow(OptionsError);
    expect(() => parseOptions(observerBaseOptionsSchema, { bins: 3 }, 'min_max')).toThrow(/Unrecognized key/);
  });
});
