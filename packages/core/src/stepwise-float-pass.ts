// Step-wise quantization: a module (or op) whose qconfig is null stays float inside the quantized
// part of the model. Prepare marks it, and where its float output feeds a quantized op it inserts a
// fake-quant (the consumer's activation qconfig) whose observed scale converts into a quantize; the
// converted model then runs the float op between a dequantize and that quantize.
import { FakeQuantize } from '@qtk/fake-quant';
import type { Node } from '@qtk/ir';
import { DeQuantStub, QuantStub } from '@qtk/nn';
import type { PrepareContext } from './prepare-context.js';
import { QatModule } from './qat-module.js';
import { moduleOf, qconfigOf } from './qconfig-of.js';
import { createFakeQuant } from './prepare-passes.js';
import { deployDeviceOf, setDeployDevice } from './deploy-device.js';

/** `node.meta` key: the node runs in float in the converted model (its qconfig is null). */
export const FLOAT_STEP = 'floatStep';
/** `node.meta` key: a fake-quant prepare put where a float step's output enters a quantized op. */
export const FLOAT_BOUNDARY = 'floatBoundary';

const isCall = (n: Node) => n.op === 'call_module' || n.op === 'call_function' || n.op === 'call_method';

/** Nodes between a QuantStub and a DeQuantStub (downstream of a stub, not past a DeQuantStub). */
export function quantizedRegion(ctx: PrepareContext): Set<Node> {
  const region = new Set<Node>();
  const inner = (n: Node) => {
    const m = moduleOf(ctx.gm, n);
    return m instanceof QatModule ? m.module : m;
  };
  const stack = ctx.gm.graph.nodes.filter((n) => inner(n) instanceof QuantStub).flatMap((n) => [...n.users]);
  while (stack.length) {
    const n = stack.pop()!;
    if (region.has(n) || inner(n) instanceof DeQuantStub || inner(n) instanceof QuantStub || n.op === 'output')
      continue;
    region.add(n);
    stack.push(...n.users);
  }
  return region;
}

/**
 * The deploy device of the quantized region's ops (a hybrid partition may have set it already):
 * float steps on the CPU, the rest on the BPU; stubs and fake-quants are boundaries, not ops.
 */
function recordDeployDevices(ctx: PrepareContext, region: ReadonlySet<Node>): void {
  for (const n of region) {
    if (!isCall(n) || deployDeviceOf(n) !== null) continue;
    const m = moduleOf(ctx.gm, n);
    const inner = m instanceof QatModule ? m.module : m;
    if (m instanceof FakeQuantize || inner instanceof QuantStub || inner instanceof DeQuantStub) continue;
    if (n.meta[FLOAT_STEP] === true) setDeployDevice(n, 'CPU', 'qconfig null');
    else setDeployDevice(n, 'BPU', 'supported');
  }
}

export function stepwiseFloatPass(ctx: PrepareContext): void {
  const { gm } = ctx;
  const graph = gm.graph;
  const region = quantizedRegion(ctx);
  const isFloat = (n: Node): boolean => {
    if (!isCall(n) || !region.has(n)) return false;
    if (moduleOf(gm, n) instanceof FakeQuantize) return n.meta[FLOAT_STEP] === true;
    return qconfigOf(ctx, n).qconfig === null;
  };
  const floats = graph.nodes.filter(isFloat);
  for (const n of floats) n.meta[FLOAT_STEP] = true;
  recordDeployDevices(ctx, region);
  for (const n of floats) {
    for (const user of [...n.users]) {
      if (!region.has(user) || user.meta[FLOAT_STEP] === true) continue;
      if (moduleOf(gm, user) instanceof FakeQuantize) continue;
      const factory = qconfigOf(ctx, user).qconfig?.activation ?? ctx.resolver.resolve('')?.activation ?? null;
      if (!factory) {
        ctx.warn(
          `'${user.name}' takes the float output of '${n.name}' (qconfig null) and has no activation qconfig to quantize it with; it stays float in conversion`,
        );
        continue;
      }
      const name = gm.addGeneratedSubmodule(
        `${n.name}_float_boundary`.replace(/[^A-Za-z0-9_]/g, '_'),
        createFakeQuant(factory, user.name)!,
      );
      const fqNode = graph.insertingAfter(n, () => graph.callModule(name, [n]));
      fqNode.meta[FLOAT_BOUNDARY] = true;
      // every quantized user of n reads the same boundary value
      n.replaceAllUsesWith(fqNode, {
        filter: (u) =>
          u !== fqNode && region.has(u) && u.meta[FLOAT_STEP] !== true && !(moduleOf(gm, u) instanceof FakeQuantize),
      });
      ctx.quantized.add(fqNode);
      break;
    }
  }
}
