// The hybrid partition: each op of the deployed part gets a device (BPU when the march's table runs
// it and the user did not ask for the CPU, else CPU), recorded in node meta. CPU nodes then take
// core's step-wise path (null qconfig: float, no fake-quant; a fake-quant where their output enters
// BPU ops, a dequantize in front of them at conversion). Where a BPU op reads a float value that no
// QuantStub quantized (a graph input, a CPU op before the first stub), the pass puts a QuantStub, so
// a CPU first op needs no hand-placed QuantStub.
import {
  deployDeviceOf,
  moduleOf,
  type PrepareContext,
  type PreparePass,
  QatModule,
  qconfigOf,
  setDeployDevice,
} from '@qtk/core';
import type { Node } from '@qtk/ir';
import { DeQuantStub, type Module, QuantStub } from '@qtk/nn';
import { assertActivationDtype, type MarchBackendV1, type QuantDType } from '@qtk/spec';
import { HybridDictMatcher } from './hybrid-dict.js';
import { nodeVerdict } from './node-support.js';

const isCall = (n: Node) => n.op === 'call_module' || n.op === 'call_function' || n.op === 'call_method';

function innerModule(ctx: PrepareContext, n: Node): Module | null {
  const m = moduleOf(ctx.gm, n);
  return m instanceof QatModule ? m.module : m;
}

/**
 * The ops that are deployed: not float pre-processing (ops that only lead into a QuantStub) and
 * not post-processing (ops after a DeQuantStub); stubs themselves are boundaries, not ops.
 */
export function deployedOps(ctx: PrepareContext): Node[] {
  const nodes = ctx.gm.graph.nodes;
  const isStub = (n: Node) => innerModule(ctx, n) instanceof QuantStub;
  const isDeStub = (n: Node) => innerModule(ctx, n) instanceof DeQuantStub;
  const walk = (starts: Node[], next: (n: Node) => Iterable<Node>, stop: (n: Node) => boolean) => {
    const seen = new Set<Node>();
    const stack = [...starts];
    while (stack.length) {
      const n = stack.pop()!;
      if (seen.has(n) || stop(n)) continue;
      seen.add(n);
      stack.push(...next(n));
    }
    return seen;
  };
  const afterStubs = walk(
    nodes.filter(isStub).flatMap((n) => [...n.users]),
    (n) => n.users,
    isDeStub,
  );
  const beforeStubs = walk(
    nodes.filter(isStub).flatMap((n) => n.inputNodes),
    (n) => n.inputNodes,
    isDeStub,
  );
  const post = walk(
    nodes.filter(isDeStub).flatMap((n) => [...n.users]),
    (n) => n.users,
    isStub,
  );
  return nodes.filter(
    (n) => isCall(n) && !isStub(n) && !isDeStub(n) && !post.has(n) && !(beforeStubs.has(n) && !afterStubs.has(n)),
  );
}

/** The activation dtype a node's qconfig asks for (null for a high-precision output); the march must carry it. */
function dtypeOf(march: MarchBackendV1, dtype: QuantDType | undefined, module: string): QuantDType | null {
  if (dtype === undefined || march.capabilities.highPrecisionOutputDtypes.includes(dtype)) return null;
  assertActivationDtype(march, dtype, module);
  return dtype;
}

/** Decides and records the device of every deployed op. */
function assignDevices(ctx: PrepareContext, ops: readonly Node[]): void {
  const matcher = new HybridDictMatcher(ctx, ctx.hybrid?.dict ?? {});
  matcher.checkAllUsed(ctx.gm.graph.nodes.filter(isCall));
  for (const node of ops) {
    const hit = matcher.match(node);
    if (hit) {
      setDeployDevice(node, 'CPU', 'hybridDict', `${hit.key} '${hit.entry}'`);
      continue;
    }
    const { qconfig, path } = qconfigOf(ctx, node);
    if (qconfig === null) {
      setDeployDevice(node, 'CPU', 'qconfig null', `qconfig of '${path || '<root>'}' is null`);
      continue;
    }
    const dtype = dtypeOf(ctx.march, qconfig.activation?.options.dtype, path || node.name);
    const verdict = nodeVerdict(ctx.gm, node, ctx.march, dtype);
    if (!verdict) continue;
    setDeployDevice(node, verdict.ok ? 'BPU' : 'CPU', verdict.reason, verdict.detail);
  }
}

/**
 * In graph order, tracks which values are quantized (a stub's output, a BPU op's output, and a CPU
 * op that reads one, which core's step-wise pass dequantizes and requantizes); a BPU op reading a
 * float graph input or CPU output gets a QuantStub in front (one per value, shared by its BPU users).
 */
function quantizeFloatInputsOfBpuOps(ctx: PrepareContext): void {
  const { gm } = ctx;
  const graph = gm.graph;
  const quantized = new Set<Node>();
  const stubs = new Map<Node, Node>();
  for (const n of [...graph.nodes]) {
    const inner = innerModule(ctx, n);
    if (inner instanceof QuantStub) {
      quantized.add(n);
      continue;
    }
    if (inner instanceof DeQuantStub) continue;
    if (deployDeviceOf(n) === 'BPU') {
      for (const a of n.inputNodes) {
        if (quantized.has(a) || !(a.op === 'placeholder' || deployDeviceOf(a) === 'CPU')) continue;
        if (stubs.has(a)) continue;
        const name = gm.addGeneratedSubmodule('quant_stub', new QuantStub());
        const stub = graph.insertingAfter(a, () => graph.callModule(name, [a]));
        a.replaceAllUsesWith(stub, { filter: (u) => u !== stub && deployDeviceOf(u) === 'BPU' });
        stubs.set(a, stub);
        quantized.add(stub);
      }
      quantized.add(n);
    } else if (n.inputNodes.some((a) => quantized.has(a))) quantized.add(n);
  }
}

function partitionDevices(ctx: PrepareContext): void {
  assignDevices(ctx, deployedOps(ctx));
  quantizeFloatInputsOfBpuOps(ctx);
}

/** The partition for prepareQatFx's hybrid mode: `prepareQatFx(model, qconfig, { march, hybrid: true, partitioner: hybridPartitioner })`. */
export const hybridPartitioner: PreparePass = Object.freeze({ name: 'hybrid-partition', run: partitionDevices });
