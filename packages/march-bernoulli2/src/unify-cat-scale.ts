// bernoulli2's optional graph pass (march-semantics.md §1, cat), its `prepareConvert` hook in
// bernoulli2UnifyCat: the producers of a cat adopt the
// cat's output scale, so the fixed-point cat is a pure copy.
import type { GraphModule, Node } from '@qtk/ir';

/** prepareQatFx names the activation fake-quants it inserts `_generated_<node>_activation_post_process_<k>`. */
const ACTIVATION_FQ = /^_generated_.*_activation_post_process_\d+$/;

function isActivationFq(n: unknown): n is Node {
  const node = n as Node;
  return (
    !!node &&
    typeof node === 'object' &&
    node.op === 'call_module' &&
    node.method === undefined &&
    ACTIVATION_FQ.test(node.target)
  );
}

function isCat(n: Node): boolean {
  if (n.op === 'call_function' || n.op === 'call_method') return n.target === 'cat' || n.target === 'concat';
  return n.op === 'call_module' && n.method === 'cat';
}

/**
 * For every cat whose output has an activation fake-quant: each input that is an activation
 * fake-quant node used by nothing but this cat is pointed at the cat's fake-quant, so its
 * producer is converted with the cat's scale and dtype and the cat's requantizes become copies.
 * Inputs whose scale lives inside a QAT module (a conv's or a QuantStub's own activation) and
 * inputs with other users keep their scale; the cat requantizes them as usual. Works on the graph
 * only (a march's `prepareConvert` hook gets the converted model's graph before any module is
 * placed). Returns the number of inputs unified.
 */
export function unifyCatScale(gm: GraphModule): number {
  let unified = 0;
  for (const node of gm.graph.nodes) {
    if (!isCat(node)) continue;
    const users = [...node.users];
    const catFq = users.length === 1 && isActivationFq(users[0]) ? users[0]! : null;
    const list = node.args[0];
    if (!catFq || !Array.isArray(list)) continue;
    for (const a of new Set(list)) {
      if (!isActivationFq(a) || a.target === catFq.target) continue;
      if ([...a.users].some((u) => u !== node)) continue;
      a.target = catFq.target;
      unified++;
    }
  }
  return unified;
}
