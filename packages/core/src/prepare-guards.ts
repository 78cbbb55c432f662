// Checks for the mistakes horizon_plugin_pytorch's guide lists as common misunderstandings: a shared
// module silently sharing one scale, a low-precision output layer, qconfigs on post-processing.
import { FakeQuantize } from '@qtk/fake-quant';
import type { Node } from '@qtk/ir';
import { DeQuantStub, FloatFunctional, type Module, QuantStub } from '@qtk/nn';
import type { PrepareContext } from './prepare-context.js';
import { QatModule, weightedLayer } from './qat-module.js';
import { moduleOf } from './qconfig-of.js';

const innerOf = (m: Module | null): Module | null => (m instanceof QatModule ? m.module : m);

/**
 * Warns for every QAT module called more than once: its calls share one weight fake-quant and one
 * output scale, observed over all of them. A FloatFunctional is not warned about: prepare gives
 * each of its calls its own output fake-quant.
 */
export function checkSharedModulesPass(ctx: PrepareContext): void {
  const calls = new Map<string, Node[]>();
  for (const n of ctx.gm.graph.nodes) {
    if (n.op !== 'call_module') continue;
    const m = moduleOf(ctx.gm, n);
    if (!(m instanceof QatModule) || m.module instanceof FloatFunctional) continue;
    if (!m.activationPostProcess && !m.weightFakeQuant) continue;
    calls.set(n.target, [...(calls.get(n.target) ?? []), n]);
  }
  for (const [target, nodes] of calls) {
    if (nodes.length < 2) continue;
    const m = moduleOf(ctx.gm, nodes[0]!) as QatModule;
    ctx.warn(
      `'${target}' (${m.module.constructor.name}) is called ${nodes.length} times (at nodes ${nodes.map((n) => n.name).join(', ')}): ` +
        'its calls share one output scale (and one weight scale), observed over all of them; give each call its own module if their value ranges differ',
    );
  }
}

/** Nodes that only pass a value through (one tensor input, no own scale): reshapes, Flatten, Identity, ReLU. */
function passesThrough(ctx: PrepareContext, n: Node): boolean {
  if (ctx.quantized.has(n) || n.inputNodes.length !== 1) return false;
  const m = innerOf(moduleOf(ctx.gm, n));
  return !(m instanceof QuantStub) && !(m instanceof FakeQuantize);
}

/**
 * Warns when a conv-family layer feeding a DeQuantStub (the model's output) has an int8/int16
 * output fake-quant: BPU convs can give an int32 high-precision output, which the "out" qconfigs ask for.
 */
export function checkOutputPrecisionPass(ctx: PrepareContext): void {
  for (const dq of ctx.gm.graph.nodes) {
    if (!(innerOf(moduleOf(ctx.gm, dq)) instanceof DeQuantStub)) continue;
    let n: Node | undefined = dq.inputNodes[0];
    while (n && passesThrough(ctx, n)) n = n.inputNodes[0];
    const m = n ? moduleOf(ctx.gm, n) : null;
    if (!n || !(m instanceof QatModule) || !m.activationPostProcess || !weightedLayer(m.module)) continue;
    ctx.warn(
      `the output layer '${n.target}' (${m.module.constructor.name}) is quantized to ${m.activationPostProcess.dtype} before '${dq.target}'; ` +
        `for a high-precision (int32) output give it an "out" qconfig: moduleName: { '${n.target}': defaultQatOutQconfig } (or getDefaultQatOutQconfig())`,
    );
  }
}

/**
 * Warns when ops after a DeQuantStub (post-processing, losses) got fake-quants: that part of the
 * model runs in float after conversion, so its qconfig should be null.
 */
export function checkAfterDeQuantStubPass(ctx: PrepareContext): void {
  const found = new Map<Node, string>();
  for (const dq of ctx.gm.graph.nodes) {
    if (!(innerOf(moduleOf(ctx.gm, dq)) instanceof DeQuantStub)) continue;
    const seen = new Set<Node>();
    const stack = [...dq.users];
    while (stack.length) {
      const n = stack.pop()!;
      if (seen.has(n)) continue;
      seen.add(n);
      const m = moduleOf(ctx.gm, n);
      if (innerOf(m) instanceof QuantStub) continue;
      if (ctx.quantized.has(n) && !found.has(n)) {
        const what =
          m instanceof FakeQuantize
            ? `an output fake-quant after '${n.inputNodes[0]?.name ?? '?'}'`
            : `'${n.target}' (${innerOf(m)?.constructor.name ?? n.target})`;
        found.set(n, `${what} after '${dq.target}'`);
      }
      stack.push(...n.users);
    }
  }
  if (!found.size) return;
  ctx.warn(
    `qconfigs reach the float part after a DeQuantStub, which gets fake-quants it will not have after conversion: ${[...found.values()].join('; ')}; ` +
      'give post-processing and loss modules qconfig null (moduleName: { name: null }) or move them out of the model',
  );
}
