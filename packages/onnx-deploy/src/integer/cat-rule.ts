// FixedCat: every input requantized to the output scale and dtype with its own plan, then joined.
import { FixedCat, QTensor } from '@qtk/fixed-point';
import { OnnxExportError, registerModuleExport } from '@qtk/onnx';
import { requantize, toDouble, toStorage } from './int-emit.js';

registerModuleExport(FixedCat, (s) => {
  const c = (s.module as FixedCat).config;
  const list = s.args[0];
  if (!Array.isArray(list) || list.length !== c.requants.length || s.inputs.length !== list.length)
    throw new OnnxExportError(
      `exportOnnx: cat node '${s.name}' was converted for ${c.requants.length} quantized inputs; it got ${Array.isArray(list) ? list.length : 0}`,
    );
  const rank = (s.out as QTensor).shape.length;
  const parts = list.map((t, k) => {
    if (!(t instanceof QTensor))
      throw new OnnxExportError(`exportOnnx: input ${k} of cat node '${s.name}' is not quantized`);
    return requantize(
      s.b,
      toDouble(s.b, s.inputs[k]!, `${s.name}_in${k}`),
      c.requants[k]!,
      -1,
      rank,
      `${s.name}_requant${k}`,
    );
  });
  const axis = (s.args[1] as number | undefined) ?? 0;
  const joined = s.b.node('Concat', parts, `${s.name}_concat`, { axis: axis < 0 ? axis + rank : axis })[0]!;
  return [toStorage(s.b, joined, c.outDtype, s.name)];
});
