import { findSubmodule, type GraphModule, type Node } from '@qtk/ir';
import { opOfFunction, opOfMethod, opOfModule, type OpMatch } from '@qtk/tensor';

/**
 * The catalog op a graph node stands for, with its attributes (and the parts of a fused module);
 * null for placeholders, outputs, constants and calls the catalog has no op for. `module`, when
 * given, is used for a call_module node instead of the graph's submodule (convert passes the
 * module with its QAT wrapper removed).
 */
export function opOfNode(gm: GraphModule, node: Node, module?: object | null): OpMatch | null {
  if (node.op === 'call_function') return opOfFunction(node.target, { args: node.args, kwargs: node.kwargs });
  if (node.op === 'call_method') return opOfMethod(node.target, { args: node.args, kwargs: node.kwargs });
  if (node.op !== 'call_module') return null;
  const m = module === undefined ? findSubmodule(gm, node.target) : module;
  return m ? opOfModule(m, node.method) : null;
}
