import type { GraphModule, Node } from '@qtk/ir';
import { DeQuantStub } from '@qtk/nn';
import { QatModule } from './qat-module.js';
import { moduleOf } from './qconfig-of.js';

const isDeQuantStub = (gm: GraphModule, n: Node): boolean => {
  const m = moduleOf(gm, n);
  return (m instanceof QatModule ? m.module : m) instanceof DeQuantStub;
};

/**
 * Inserts a `_generated_dequant_stub_<k>` DeQuantStub call before every graph output that no DeQuantStub
 * computes yet, so a converted model returns float tensors, as the float model does; returns their names.
 * One stub per distinct value: an output listed twice gets one stub, and only the output reads it.
 */
export function insertOutputDeQuantStubs(gm: GraphModule): string[] {
  const graph = gm.graph;
  const output = graph.outputNode;
  if (!output) return [];
  const names: string[] = [];
  for (const value of new Set(output.inputNodes)) {
    if (isDeQuantStub(gm, value)) continue;
    const name = gm.addGeneratedSubmodule('dequant_stub', new DeQuantStub());
    const stub = graph.insertingBefore(output, () => graph.callModule(name, [value]));
    output.replaceInputWith(value, stub);
    names.push(name);
  }
  return names;
}
