// FixedCompare: the sign of the march's `a - b` accumulator (add-terms.ts) against 0, a BOOL output.
import { FixedCompare, type CompareKind } from '@qtk/fixed-point';
import { type OnnxBuilder, registerModuleExport } from '@qtk/onnx';
import { addAccumulator } from './add-terms.js';
import { binaryOperands } from './binary-operands.js';
import { doubleScalar } from './int-emit.js';

/** `acc <op> 0` as one comparison node, or its negation (opset 11 has no GreaterOrEqual / LessOrEqual). */
function compareWithZero(b: OnnxBuilder, acc: string, kind: CompareKind, name: string): string {
  const zero = doubleScalar(b, 0, `${name}_zero`);
  const cmp = (op: string, out: string) => b.node(op, [acc, zero], out)[0]!;
  const not = (v: string) => b.node('Not', [v], name)[0]!;
  switch (kind) {
    case 'eq':
      return cmp('Equal', name);
    case 'ne':
      return not(cmp('Equal', `${name}_eq`));
    case 'gt':
      return cmp('Greater', name);
    case 'lt':
      return cmp('Less', name);
    case 'ge':
      return b.opset >= 12 ? cmp('GreaterOrEqual', name) : not(cmp('Less', `${name}_lt`));
    case 'le':
      return b.opset >= 12 ? cmp('LessOrEqual', name) : not(cmp('Greater', `${name}_gt`));
  }
}

registerModuleExport(FixedCompare, (s) => {
  const c = (s.module as FixedCompare).config;
  const [a, b] = binaryOperands(s, c.scalars);
  return [compareWithZero(s.b, addAccumulator(s.b, a, b, c.plan, s.name), c.kind, s.name)];
});
