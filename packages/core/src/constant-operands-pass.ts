// A tensor the model holds (a class token, a position embedding, an imported initializer) that
// enters a quantized op as an operand is quantized there with its own observed scale, as PyTorch FX
// observes a get_attr input: prepare puts a fake-quant after it, and convert turns that into a
// quantize of the constant, so the op converts on the BPU instead of failing with "its operand is
// not a quantized tensor".
import { FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule, Node } from '@qtk/ir';
import { QuantStub } from '@qtk/nn';
import { opOfNode } from '@qtk/spec';
import { Tensor } from '@qtk/tensor';
import type { PrepareContext } from './prepare-context.js';
import { createFakeQuant } from './prepare-passes.js';
import { QatModule } from './qat-module.js';
import { moduleOf, qconfigOf } from './qconfig-of.js';
import { FLOAT_BOUNDARY, FLOAT_STEP, quantizedRegion } from './stepwise-float-pass.js';

/** Ops whose tensor operands are activations (a shape or an index operand is never quantized). */
const ACTIVATION_OPERAND_OPS = new Set(['Add', 'Sub', 'Mul', 'Div', 'MatMul', 'Concat', 'Max', 'Min']);

/** Ops whose rules take a number operand. */
const SCALAR_OPERAND_OPS = new Set(['Add', 'Sub', 'Mul', 'Div']);

const innerOf = (gm: GraphModule, n: Node) => {
  const m = moduleOf(gm, n);
  return m instanceof QatModule ? m.module : m;
};

/** The value of a get_attr holding one float (shape [] or [1]), else null. */
function scalarOf(gm: GraphModule, c: Node): number | null {
  if (c.op !== 'get_attr') return null;
  let owner: unknown = gm;
  for (const p of c.target.split('.')) owner = (owner as Record<string, unknown> | undefined)?.[p];
  if (!(owner instanceof Tensor) || owner.dtype !== 'float32' || owner.size !== 1 || owner.ndim > 1) return null;
  const v = owner.values()[0]!;
  return Number.isFinite(v) ? v : null;
}

const isCall = (n: Node) => n.op === 'call_function' || n.op === 'call_method';

/** get_attr nodes and the function / method calls computed from them alone (`token.expand(...)`). */
function constantNodes(nodes: readonly Node[]): Set<Node> {
  const constants = new Set<Node>();
  for (const n of nodes) {
    if (n.op === 'get_attr') constants.add(n);
    else if (isCall(n) && n.inputNodes.length > 0 && n.inputNodes.every((i) => constants.has(i))) constants.add(n);
  }
  return constants;
}

export function constantOperandsPass(ctx: PrepareContext): void {
  const { gm } = ctx;
  const graph = gm.graph;
  const region = quantizedRegion(ctx);
  const constants = constantNodes(graph.nodes);
  const takesActivation = (u: Node): boolean => {
    if (!region.has(u) || constants.has(u) || u.meta[FLOAT_STEP] === true) return false;
    const inner = innerOf(gm, u);
    if (moduleOf(gm, u) instanceof FakeQuantize || inner instanceof QuantStub) return false;
    const op = opOfNode(gm, u, inner)?.op;
    return op !== undefined && ACTIVATION_OPERAND_OPS.has(op);
  };
  for (const c of constants) {
    const scalar = scalarOf(gm, c);
    if (scalar !== null) {
      // a one-element constant of add / sub / mul / div is the rules' number operand, exact in float64
      for (const u of [...c.users])
        if (takesActivation(u) && SCALAR_OPERAND_OPS.has(opOfNode(gm, u, innerOf(gm, u))?.op ?? ''))
          u.args = u.args.map((a) => (a === c ? scalar : a));
    }
    const user = [...c.users].find(takesActivation);
    if (!user) continue;
    const factory = qconfigOf(ctx, user).qconfig?.activation ?? null;
    if (!factory) continue; // the op stays float (null qconfig); it takes the float constant as it is
    const name = gm.addGeneratedSubmodule(
      `${c.name}_constant_quant`.replace(/[^A-Za-z0-9_]/g, '_'),
      createFakeQuant(factory, user.name)!,
    );
    const fqNode = graph.insertingAfter(c, () => graph.callModule(name, [c]));
    fqNode.meta[FLOAT_BOUNDARY] = true;
    c.replaceAllUsesWith(fqNode, { filter: (u) => u !== fqNode && takesActivation(u) });
    ctx.quantized.add(fqNode);
  }
}
