// FixedValueOp: an op that moves or selects integers runs as its float ONNX form on the integers
// (int8 / int16 are exact in float32, and QTK runs the same float op on them), then back to integers,
// requantized and clamped when the op has its own output scale.
import { FixedValueOp, QTensor, type ValueOpOutput } from '@qtk/fixed-point';
import { Tensor } from '@qtk/tensor';
import {
  OnnxExportError,
  exportCall,
  exportModule,
  moduleExportRuleOf,
  registerModuleExport,
  type ModuleExportStep,
  DataType,
} from '@qtk/onnx';
import { cast, clip, requantize, toDouble, toStorage } from './int-emit.js';
import { valueOpForm } from './value-op-forms.js';

function asFloat(v: unknown): unknown {
  if (v instanceof QTensor)
    return new Tensor({ data: Float32Array.from(v.ints()), shape: [...v.shape], dtype: 'float32' });
  if (Array.isArray(v)) return v.map(asFloat);
  return v;
}

function firstQuantized(v: unknown): QTensor | null {
  if (v instanceof QTensor) return v;
  if (Array.isArray(v))
    for (const e of v) {
      const q = firstQuantized(e);
      if (q) return q;
    }
  return null;
}

/** The tensor values among the arguments, flattened in the order of the step's ONNX inputs. */
function tensorArgs(v: unknown, into: unknown[] = []): unknown[] {
  if (v instanceof QTensor || v instanceof Tensor) into.push(v);
  else if (Array.isArray(v)) for (const e of v) tensorArgs(e, into);
  return into;
}

function outputOf(s: ModuleExportStep, floatName: string, out: unknown, o: ValueOpOutput | null, k: number): string {
  const { b, name } = s;
  const base = k === 0 ? name : `${name}_${k}`;
  if (!(out instanceof QTensor)) return floatName; // shapes and indices pass as they are
  if (!o) return cast(b, floatName, storageElem(out), base);
  let v = toDouble(b, floatName, base);
  if (o.plan) v = requantize(b, v, o.plan, -1, out.shape.length, `${base}_requant`);
  if (o.clamp) v = clip(b, v, o.clamp[0], o.clamp[1], `${base}_clamp`);
  return toStorage(b, v, o.dtype, base);
}

function storageElem(q: QTensor): number {
  return q.dtype === 'qint8'
    ? DataType.INT8
    : q.dtype === 'qint16'
      ? DataType.INT16
      : q.dtype === 'qint32'
        ? DataType.INT32
        : DataType.BOOL;
}

registerModuleExport(FixedValueOp, (s) => {
  const op = s.module as FixedValueOp;
  const ref = firstQuantized(s.args);
  if (!ref) throw new OnnxExportError(`exportOnnx: ${op.label} (node '${s.name}') has no quantized input`);
  const t = op.target;
  // an item of a list of quantized values (split's outputs) is that value itself (an Identity: each
  // node keeps a value of its own, also when two items pick the same piece)
  if (t.kind === 'function' && t.name === 'getitem' && !op.output && s.out instanceof QTensor) {
    const list = s.args[0] as unknown[];
    const i = s.args[1] as number;
    const picked = s.inputs[i < 0 ? i + list.length : i];
    if (picked === undefined || s.inputs.length !== list.length)
      throw new OnnxExportError(`exportOnnx: ${op.label} (node '${s.name}') picks a value without an ONNX name`);
    return s.b.node('Identity', [picked], s.name);
  }
  // integers to float32 for the float op; other tensors (indices, shapes) pass as they are
  const kinds = tensorArgs(s.args);
  const inputs = s.inputs.map((n, i) =>
    kinds[i] instanceof QTensor ? cast(s.b, n, DataType.FLOAT, `${s.name}_in${i}`) : n,
  );
  const floatOut = asFloat(s.out);
  const inner = { ...s, inputs, args: s.args.map(asFloat), out: floatOut, name: `${s.name}_op` };
  let names: string[];
  const form = valueOpForm(t, inner);
  if (form) names = form;
  else if (t.kind === 'module') {
    const rule = moduleExportRuleOf(t.module);
    names = rule ? rule({ ...inner, module: t.module, method: undefined }) : exportModule(t.module, inner, undefined);
  } else {
    names = exportCall(t.name, inner, s.args as never);
  }
  const outs = Array.isArray(s.out) ? s.out : [s.out];
  return names.map((n, k) => outputOf(s, n, outs[k], op.output, k));
});
