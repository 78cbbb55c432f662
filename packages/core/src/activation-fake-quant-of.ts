import { FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { FLOAT_BOUNDARY } from './stepwise-float-pass.js';
import { QatModule } from './qat-module.js';
import { moduleOf } from './qconfig-of.js';

/**
 * The fake-quant that quantizes node `name`'s output in a prepared model: a QAT module's output
 * fake-quant, else the activation fake-quant prepare inserted after the node; null when the output
 * is not fake-quantized (pass-through ops, high-precision outputs, float nodes, unknown names).
 */
export function activationFakeQuantOf(gm: GraphModule, name: string): FakeQuantize | null {
  const node = gm.graph.nodes.find((n) => n.name === name);
  if (!node) return null;
  const m = moduleOf(gm, node);
  if (m instanceof QatModule) return m.activationPostProcess instanceof FakeQuantize ? m.activationPostProcess : null;
  if (m instanceof FakeQuantize) return m;
  for (const user of node.users) {
    const fq = moduleOf(gm, user);
    if (fq instanceof FakeQuantize && user.meta[FLOAT_BOUNDARY] !== true) return fq;
  }
  return null;
}
