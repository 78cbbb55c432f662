// div as the composite x · reciprocal(y) (march-semantics.md §1 "Composite ops"): a tensor-by-tensor
// div becomes mul(x, fq(reciprocal(y))), the reciprocal through its own fake-quant (qint16 where the
// march has it), so calibration observes the intermediate's scale and conversion builds it from the
// reciprocal-table and mul rules. A div by a number is a mul by its reciprocal.
import { findSubmodule, type Node } from '@qtk/ir';
import { FloatFunctional } from '@qtk/nn';
import type { MarchPrepareContext } from '@qtk/spec';

function isDiv(ctx: MarchPrepareContext, n: Node): boolean {
  if ((n.op === 'call_function' || n.op === 'call_method') && n.target === 'div') return true;
  if (n.op !== 'call_module' || n.method !== 'div') return false;
  return findSubmodule(ctx.gm, n.target) instanceof FloatFunctional;
}

const isNode = (a: unknown): a is Node => typeof a === 'object' && a !== null && 'users' in a && 'op' in a;

/** Rewrites each div whose output is fake-quantized (its single user an inserted fake-quant). */
export function decomposeDiv(ctx: MarchPrepareContext): void {
  const dtype = ctx.march.capabilities.activationDtypes.includes('qint16') ? 'qint16' : 'qint8';
  const { gm } = ctx;
  const graph = gm.graph;
  for (const node of [...graph.nodes]) {
    if (!isDiv(ctx, node)) continue;
    const [x, y] = node.args;
    const users = [...node.users];
    if (users.length !== 1 || !ctx.quantized.has(users[0]!)) continue;
    if (isNode(x) && typeof y === 'number' && Number.isFinite(1 / y)) {
      // x / c (an attention's 1/√d): the mul rule's scalar operand, 1/c in float64
      const mul = graph.insertingBefore(node, () => graph.callFunction('mul', [x, 1 / y]));
      mul.meta = { ...node.meta, decomposedFrom: node.name };
      node.replaceAllUsesWith(mul);
      graph.eraseNode(node);
      continue;
    }
    if (!isNode(x) || !isNode(y)) continue;
    const fq = ctx.intermediateFakeQuant(node, { dtype });
    if (!fq) continue;
    const fqName = gm.addGeneratedSubmodule(`${node.name}_reciprocal_post_process`.replace(/[^A-Za-z0-9_]/g, '_'), fq);
    const mul = graph.insertingBefore(node, () => {
      const r = graph.callFunction('reciprocal', [y]);
      const rq = graph.callModule(fqName, [r]);
      ctx.quantized.add(rq);
      return graph.callFunction('mul', [x, rq]);
    });
    mul.meta = { ...node.meta, decomposedFrom: node.name };
    node.replaceAllUsesWith(mul);
    graph.eraseNode(node);
  }
}
