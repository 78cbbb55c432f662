// Linter rule: ops of the deployed part the march cannot run, each with the hybridDict entry that
// keeps it on the CPU (the verdict is the hybrid partitioner's own, the march converter's decision).
import { deployedOps as hybridDeployedOps, nodeVerdict } from '@qtk/hybrid';
import type { Node } from '@qtk/ir';
import type { QuantDType } from '@qtk/spec';
import { displayName, type LintContext } from './lint-context.js';
import type { Finding } from './lint-findings.js';
import { nodeTypeOf } from '../values/node-type.js';

/** The ops that are deployed: neither float pre-processing before the QuantStubs nor post-processing after the DeQuantStubs (the hybrid partitioner's own choice). */
export function deployedOps(ctx: LintContext): Node[] {
  return hybridDeployedOps(ctx.prepare);
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
    const verdict = nodeVerdict(ctx.gm, node, ctx.march, activationDtype(ctx, qconfig.activation?.options.dtype));
    if (!verdict || verdict.ok) continue;
    const name = displayName(node);
    // a shared module's calls have one entry
    if (findings.some((f) => f.node === name)) continue;
    const what = `'${name}' (${nodeTypeOf(ctx.gm, node)}) cannot run on march '${ctx.march.id}': ${verdict.detail ?? verdict.reason}`;
    if (node.op !== 'call_module') {
      // a function has no module name for a hybridDict; hybrid mode puts exactly this op on the CPU
      if (ctx.hybrid) continue;
      findings.push({
        code: 'unsupported-op',
        severity: 'error',
        node: name,
        message: `${what}; prepareQatFx's hybrid mode runs it on the CPU`,
        fix: { kind: 'prepare-option', option: { hybrid: true } },
      });
      continue;
    }
    findings.push({
      code: 'unsupported-op',
      severity: ctx.hybrid ? 'info' : 'error',
      node: name,
      message: ctx.hybrid
        ? `${what}; hybrid mode runs it on the CPU (name it in the hybridDict to make that explicit)`
        : `${what}; keep it on the CPU with prepareQatFx's hybrid mode`,
      fix: { kind: 'hybrid', hybridDict: { moduleName: [node.target] } },
    });
  }
  return findings;
}
