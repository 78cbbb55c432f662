// The elementwise, comparison, mask and broadcasting ops the importer brings in (import/elementwise.ts) as ONNX
// nodes again, so that an imported model with them exports.
import { Tensor } from '@qtk/tensor';
import { OnnxExportError } from './errors.js';
import type { ExportStep } from './export-modules.js';

const UNARY: Record<string, string> = {
  erf: 'Erf',
  sin: 'Sin',
  cos: 'Cos',
  floor: 'Floor',
  ceil: 'Ceil',
  round: 'Round',
  sign: 'Sign',
  logicalNot: 'Not',
};

const BINARY: Record<string, string> = {
  eq: 'Equal',
  gt: 'Greater',
  lt: 'Less',
  logicalAnd: 'And',
  logicalOr: 'Or',
  logicalXor: 'Xor',
};

/** Tensor operands in order; a number becomes a scalar constant of the other operand's type. */
function operands(s: ExportStep, count: number): string[] {
  let k = 0;
  const like = s.args.find((a) => a instanceof Tensor) as Tensor | undefined;
  return Array.from({ length: count }, (_, i) => {
    const a = s.args[i];
    if (a instanceof Tensor) return s.inputs[k++]!;
    const v = Number(a);
    return like && like.dtype !== 'float32'
      ? s.b.intConst([v], `${s.name}_scalar`, [])
      : s.b.floatConst([v], `${s.name}_scalar`, []);
  });
}

/** onnx.expand's target: constant, or with its batch entries read from the batch source's shape at run time. */
function expandShape(s: ExportStep): string {
  const { b, name } = s;
  const shape = s.args[1] as number[];
  if (!(s.args[2] instanceof Tensor)) return b.intConst(shape, `${name}_shape`);
  const axis = (s.args[3] as number | undefined) ?? 0;
  const entries = (s.args[4] as number[] | undefined) ?? [];
  const [dims] = b.node('Shape', [s.inputs[1]!], `${name}_batch_shape`);
  const [batch] = b.node('Gather', [dims!, b.intConst([axis], `${name}_batch_axis`)], `${name}_batch`);
  const parts = shape.map((d, i) => (entries.includes(i) ? batch! : b.intConst([d], `${name}_dim${i}`)));
  return b.node('Concat', parts, `${name}_shape`, { axis: 0 })[0]!;
}

/** The ONNX nodes of `op`, or null when it is not one of these ops. */
export function exportElementwise(op: string, s: ExportStep): string[] | null {
  const { b, name } = s;
  if (UNARY[op]) return b.node(UNARY[op]!, [s.inputs[0]!], name);
  if (BINARY[op]) return b.node(BINARY[op]!, operands(s, 2), name);
  switch (op) {
    case 'ge':
    case 'le': {
      const ins = operands(s, 2);
      if (b.opset >= 12) return b.node(op === 'ge' ? 'GreaterOrEqual' : 'LessOrEqual', ins, name);
      const strict = b.node(op === 'ge' ? 'Less' : 'Greater', ins, `${name}_strict`);
      return b.node('Not', strict, name);
    }
    case 'where':
      return b.node('Where', operands(s, 3), name);
    case 'onnx.expand':
      return b.node('Expand', [s.inputs[0]!, expandShape(s)], name);
    case 'onnx.tile':
      return b.node('Tile', [s.inputs[0]!, b.intConst(s.args[1] as number[], `${name}_repeats`)], name);
    case 'onnx.mod':
      return b.node('Mod', s.inputs.slice(0, 2), name, { fmod: s.args[2] ? 1 : 0 });
    case 'onnx.scatterND': {
      const reduction = (s.args[3] as string | undefined) ?? 'none';
      if (reduction === 'none') return b.node('ScatterND', s.inputs.slice(0, 3), name);
      const needed = reduction === 'add' || reduction === 'mul' ? 16 : 18;
      if (b.opset < needed)
        throw new OnnxExportError(
          `exportOnnx: scatterND '${name}' with reduction '${reduction}' needs opset ${needed}; pass { opset: ${needed} }`,
          { neededOpset: needed },
        );
      return b.node('ScatterND', s.inputs.slice(0, 3), name, { reduction });
    }
    case 'onnx.instanceNorm':
      return b.node('InstanceNormalization', s.inputs.slice(0, 3), name, { epsilon: { float: s.args[3] as number } });
    default:
      return null;
  }
}
