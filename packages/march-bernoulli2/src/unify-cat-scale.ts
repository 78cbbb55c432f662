// bernoulli2's optional graph pass (march-semantics.md §1, cat): the producers of a cat adopt the
// cat's output scale, so the fixed-point cat is a pure copy. At prepare (optimizeGraph, and always in
// bernoulli2UnifyCat) the producers' fake-quants are tied to the cat's, so QAT trains with the scales
// the deployed model has; at conversion (bernoulli2UnifyCat's prepareConvert) a model prepared
// without it is unified then.
import type { GraphModule, Node } from '@qtk/ir';
import {
  fakeQuantRoleOf,
  opOfNode,
  setFakeQuantRole,
  TIED_FAKE_QUANT_METHOD,
  type MarchPrepareContext,
  type MarchPreparePass,
} from '@qtk/spec';

/** An output fake-quant prepare inserted after an op (by the role it recorded, whatever the module's name). */
function isActivationFq(n: unknown): n is Node {
  const node = n as Node;
  return (
    !!node &&
    typeof node === 'object' &&
    node.op === 'call_module' &&
    node.method === undefined &&
    fakeQuantRoleOf(node) === 'activation'
  );
}

/**
 * For every cat whose output has an activation fake-quant: each input that is an activation
 * fake-quant node used by nothing but this cat is pointed at the cat's fake-quant, so its
 * producer is converted with the cat's scale and dtype and the cat's requantizes become copies.
 * Inputs whose scale lives inside a QAT module (a conv's or a QuantStub's own activation) and
 * inputs with other users keep their scale; the cat requantizes them as usual. Works on the graph
 * only (a march's `prepareConvert` hook gets the converted model's graph before any module is
 * placed); `modules` holds the modules its call_module nodes name (the QAT model; default `gm`).
 * Returns the number of inputs unified.
 */
export function unifyCatScale(gm: GraphModule, modules: GraphModule = gm): number {
  return unifyCatInputs(gm, modules, (a, catFq) => {
    a.target = catFq.target;
  });
}

/**
 * unifyCatScale at prepare: each such input's fake-quant node becomes a call of the cat's fake-quant
 * that quantizes with its scale without observing (`applyWithoutObserving`), so calibration observes the
 * cat's output alone and QAT sees the shared scale; the input's own fake-quant module is removed.
 */
export function tieCatInputs(gm: GraphModule): number {
  const tied = unifyCatInputs(gm, gm, (a, catFq) => {
    const graph = gm.graph;
    const tied = graph.insertingAfter(a, () =>
      graph.callModule(catFq.target, a.args, {}, { method: TIED_FAKE_QUANT_METHOD }),
    );
    tied.meta = { ...a.meta };
    setFakeQuantRole(tied, 'activation');
    a.replaceAllUsesWith(tied);
    const own = a.target;
    graph.eraseNode(a);
    if (!graph.nodes.some((n) => n.op === 'call_module' && n.target === own)) gm.deleteSubmodule(own);
  });
  if (tied) gm.recompile();
  return tied;
}

/** bernoulli2's prepare pass for `optimizeGraph`: cat inputs tied to the cat's scale. */
export const TIE_CAT_INPUTS_PASS: MarchPreparePass = Object.freeze({
  name: 'tie-cat-inputs',
  run: (ctx: MarchPrepareContext) => {
    tieCatInputs(ctx.gm);
  },
});

function unifyCatInputs(gm: GraphModule, modules: GraphModule, unify: (input: Node, catFq: Node) => void): number {
  let unified = 0;
  for (const node of [...gm.graph.nodes]) {
    if (opOfNode(modules, node)?.op !== 'Concat') continue;
    const users = [...node.users];
    const catFq = users.length === 1 && isActivationFq(users[0]) ? users[0]! : null;
    const list = node.args[0];
    if (!catFq || !Array.isArray(list)) continue;
    for (const a of new Set(list)) {
      if (!isActivationFq(a) || a.target === catFq.target) continue;
      if ([...a.users].some((u) => u !== node)) continue;
      unify(a, catFq);
      unified++;
    }
  }
  return unified;
}
