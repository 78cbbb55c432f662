// What the visualisation export says about one module: the op it stands for, its fake-quants'
// scales (QAT and calibrated models), its codec config (fixed-point models: plans, output scales,
// tables), the fused parts, and its weights.
import { QatModule } from '@qtk/core';
import { fromJsonData, FixedConv, FixedValueOp } from '@qtk/fixed-point';
import { moduleCodecs, SerializationError } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { FakeQuantV1 } from '@qtk/spec';
import { opOfFunction, opOfMethod, opOfModule, type Tensor } from '@qtk/tensor';
import type { AttributeMsg } from '@qtk/onnx';
import {
  type FlatValue,
  flattenToAttributes,
  floatsAttr,
  intAttr,
  stringAttr,
  stringsAttr,
} from './visual-attributes.js';

/** The quantization of one value: float32 scale(s), quantized dtype, channel axis (-1: per tensor). */
export interface QuantInfo {
  readonly scale: Float32Array;
  readonly dtype: string;
  readonly axis: number;
}

export interface ModuleDescription {
  opType: string;
  attributes: AttributeMsg[];
  /** Parameters and buffers (not the fake-quants' own), by their path under the module. */
  weights: [string, Tensor][];
  /** Config integer arrays too long for an attribute (lookup tables), by dotted config key. */
  arrays: FlatValue['arrays'];
  /** The quantization of the module's output, from its output fake-quant; null when it has none. */
  output: QuantInfo | null;
}

export function asFakeQuant(m: unknown): FakeQuantV1 | null {
  const f = m as Partial<FakeQuantV1> | null;
  return f && f.apiVersion === 1 && typeof f.calculateQparams === 'function' ? (f as FakeQuantV1) : null;
}

export function fakeQuantInfo(fq: FakeQuantV1): QuantInfo {
  const q = fq.calculateQparams();
  return { scale: Float32Array.from(q.scale), dtype: q.dtype, axis: q.chAxis };
}

/** Attributes `<prefix>scale` (FLOATS), `<prefix>dtype`, `<prefix>axis` of a value's quantization. */
export function quantAttributes(prefix: string, q: QuantInfo): AttributeMsg[] {
  return [
    floatsAttr(`${prefix}scale`, q.scale),
    stringAttr(`${prefix}dtype`, q.dtype),
    intAttr(`${prefix}axis`, q.axis),
  ];
}

/** The role a fake-quant plays in its module, named after its path: output, weight, or a composite's step. */
function roleOf(path: string): string {
  if (path === '' || path === 'activationPostProcess') return 'output';
  if (path === 'weightFakeQuant') return 'weight';
  return path.replace(/(_fake_quant|FakeQuant)$/, '').replace(/\./g, '_');
}

/** The module whose op the node shows: a QAT module's float (or fused) module, a value op's float module. */
function opModuleOf(m: Module): Module | null {
  if (m instanceof QatModule) return m.module;
  if (m instanceof FixedValueOp) return m.target.kind === 'module' ? m.target.module : null;
  return m;
}

function opTypeOf(m: Module, method: string | undefined): string {
  if (m instanceof FixedValueOp && m.target.kind !== 'module')
    return (m.target.kind === 'function' ? opOfFunction(m.target.name) : opOfMethod(m.target.name))?.op ?? m.label;
  const inner = opModuleOf(m)!;
  return opOfModule(inner, method)?.op ?? inner.constructor.name;
}

const CONV_OP = { conv: 'Conv', conv_transpose: 'ConvTranspose', linear: 'Gemm' } as const;

/** The ops a fused module runs in order ([Conv, Add, Relu]); null for a module that fuses nothing. */
function fusedPartsOf(m: Module): readonly string[] | null {
  if (m instanceof FixedConv) {
    const c = m.config;
    const act = c.activation === 'relu' ? ['Relu'] : c.activation === 'relu6' ? ['Clip'] : [];
    const parts = [CONV_OP[c.kind], ...(c.sumin ? ['Add'] : []), ...act];
    return parts.length > 1 ? parts : null;
  }
  const inner = opModuleOf(m);
  return (inner && opOfModule(inner)?.fused?.parts) ?? null;
}

/** The module's codec config as plain data (typed arrays restored); undefined without a codec that can describe it. */
function codecConfigOf(m: Module): unknown {
  const codec = moduleCodecs.forModule(m);
  if (!codec) return undefined;
  try {
    return fromJsonData(codec.config(m), m.constructor.name);
  } catch (e) {
    // a value op over a module without a codec: the catalog's attributes describe it instead
    if (SerializationError.isInstance(e)) return undefined;
    throw e;
  }
}

/** Describes a call of `m` (with `method` for FloatFunctional-style calls). */
export function describeModule(m: Module, method: string | undefined): ModuleDescription {
  const attributes: AttributeMsg[] = [stringAttr('module_class', m.constructor.name)];
  const inner = opModuleOf(m);
  if (inner && inner !== m) attributes.push(stringAttr('wrapped_class', inner.constructor.name));
  if (method) attributes.push(stringAttr('method', method));
  const parts = fusedPartsOf(m);
  if (parts) attributes.push(stringsAttr('fused', parts));

  // Fake-quants (the module itself, or its children): their scales by role; their subtrees hold no weights.
  let output: QuantInfo | null = null;
  const fqPaths: string[] = [];
  for (const [path, sub] of m.namedModules()) {
    const fq = asFakeQuant(sub);
    if (!fq || fqPaths.some((p) => path === p || path.startsWith(`${p}.`))) continue;
    fqPaths.push(path);
    const role = roleOf(m instanceof QatModule ? path.replace(/^module\./, '') : path);
    const info = fakeQuantInfo(fq);
    if (role === 'output') output = info;
    else attributes.push(...quantAttributes(`${role}_`, info));
  }
  const underFakeQuant = (path: string) => fqPaths.some((p) => p === '' || path === p || path.startsWith(`${p}.`));
  const weights: [string, Tensor][] = [];
  for (const [path, sub] of m.namedModules()) {
    if (underFakeQuant(path)) continue;
    for (const [name, t] of [...sub.ownParameters(), ...sub.ownBuffers()])
      weights.push([path ? `${path}.${name}` : name, t as Tensor]);
  }

  // A QAT module: the catalog's attributes of its op (stride, padding, ...); any other module: the
  // config its codec stores (fixed point: requantize plans, output scales, tables), else the catalog's.
  const flat: FlatValue = { attributes: [], arrays: [] };
  const config = m instanceof QatModule ? undefined : codecConfigOf(m);
  if (config !== undefined) flattenToAttributes(config, '', flat);
  else flattenToAttributes(opOfModule(inner ?? m, method)?.attrs ?? {}, '', flat);
  attributes.push(...flat.attributes);
  return { opType: opTypeOf(m, method), attributes, weights, arrays: flat.arrays, output };
}
