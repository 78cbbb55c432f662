// Linter rule: ops of the deployed part the march's capability table cannot run, each with the
// hybridDict entry that keeps it on the CPU (the verdict is the hybrid partitioner's own).
import { nodeVerdict } from '@qtk/hybrid';
import type { Node } from '@qtk/ir';
import type { QuantDType } from '@qtk/spec';
import { displayName, isCall, isDeQuantStub, isQuantStub, type LintContext } from './lint-context.js';
import type { Finding } from './lint-findings.js';
import { nodeTypeOf } from './node-type.js';

function reach(starts: Iterable<Node>, next: (n: Node) => Iterable<Node>, stop: (n: Node) => boolean): Set<Node> {
  const seen = new Set<Node>();
  const stack = [...starts];
  while (stack.length) {
    const n = stack.pop()!;
    if (seen.has(n) || stop(n)) continue;
    seen.add(n);
    stack.push(...next(n));
  }
  return seen;
}

/** The ops that are deployed: neither float pre-processing before the QuantStubs nor post-processing after the DeQuantStubs. */
export function deployedOps(ctx: LintContext): Node[] {
  const nodes = ctx.gm.graph.nodes;
  const stub = (n: Node) => isQuantStub(ctx, n);
  const destub = (n: Node) => isDeQuantStub(ctx, n);
  const after = reach(
    nodes.filter(stub).flatMap((n) => [...n.users]),
    (n) => n.users,
    destub,
  );
  const before = reach(
    nodes.filter(stub).flatMap((n) => n.inputNodes),
    (n) => n.inputNodes,
    destub,
  );
  const post = reach(
    nodes.filter(destub).flatMap((n) => [...n.users]),
    (n) => n.users,
    stub,
  );
  return nodes.filter((n) => isCall(n) && !stub(n) && !destub(n) && !post.has(n) && !(before.has(n) && !after.has(n)));
}

function activationDtype(ctx: LintContext, dtype: QuantDType | undefined): QuantDType | null {
  const caps = ctx.march.capabilities;
  if (dtype === undefined || caps.highPrecisionOutputDtypes.includes(dtype)) return null;
  return caps.activationDtypes.includes(dtype) ? dtype : null;
}

export function deviceFindings(ctx: LintContext): Finding[] {
  const findings: Finding[] = [];
  for (const node of deployedOps(ctx)) {
    if (ctx.hybridMatcher.match(node)) continue;
    const { qconfig } = ctx.qconfigOf(node);
    if (qconfig === null) continue;
    const verdict = nodeVerdict(
      ctx.gm,
      node,
      ctx.march.capabilities,
      activationDtype(ctx, qconfig.activation?.options.dtype),
    );
    if (!verdict || verdict.ok) continue;
    const name = displayName(node);
    // a shared module's calls have one entry
    if (findings.some((f) => f.node === name)) continue;
    const entry = node.op === 'call_module' ? node.target : node.scope;
    const what = `'${name}' (${nodeTypeOf(ctx.gm, node)}) cannot run on march '${ctx.march.id}': ${verdict.detail ?? verdict.reason}`;
    findings.push({
      code: 'unsupported-op',
      severity: ctx.hybrid ? 'info' : 'error',
      node: name,
      message: ctx.hybrid
        ? `${what}; hybrid mode runs it on the CPU`
        : `${what}; keep it on the CPU with prepareQatFx's hybrid mode${node.op !== 'call_module' && entry !== '' ? ` (the entry names '${entry}', the module whose forward calls it: all of its ops go to the CPU)` : ''}`,
      fix:
        entry !== ''
          ? { kind: 'hybrid', hybridDict: { moduleName: [entry] } }
          : {
              kind: 'code',
              hint: `wrap '${name}' in a module so a hybridDict can name it, or replace it with an op march '${ctx.march.id}' runs`,
            },
    });
  }
  return findings;
}
