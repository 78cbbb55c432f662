// Linter rules from the fusion check and the call counts: chains prepare will fuse, chains a shared
// module keeps unfused, and modules whose calls would share one scale.
import { FloatFunctional } from '@qtk/nn';
import { checkUnfusedOperations } from '../checks/check-unfused.js';
import type { LintContext } from './lint-context.js';
import type { Finding } from './lint-findings.js';
import { getModuleCalledCount } from '../checks/module-called-count.js';

export function fusionFindings(ctx: LintContext): Finding[] {
  const result = checkUnfusedOperations(ctx.traced, { march: ctx.march });
  const findings: Finding[] = result.unfused.map((chain) => ({
    code: 'unfused-pattern',
    severity: 'info',
    node: chain.fusedModule,
    message: `${chain.nodes.join(' → ')} matches '${chain.pattern}'; prepareQatFx fuses it into '${chain.fusedModule}'`,
    fix: { kind: 'fuse', hint: 'nothing to do: prepareQatFx fuses this chain' },
  }));
  for (const chain of result.blocked) {
    const chainText = `${chain.nodes.join(' → ')} ('${chain.pattern}')`;
    if (chain.reason === 'march') {
      findings.push({
        code: 'fusion-unsupported',
        severity: 'info',
        node: chain.nodes[0]!,
        message: `${chainText} stays unfused: ${chain.detail}`,
        fix: { kind: 'code', hint: 'none needed: the ops run one by one, each with its own output scale' },
      });
      continue;
    }
    const shared = chain.reason === 'shared-layer' || chain.reason === 'shared-norm';
    const module = chain.reason === 'shared-norm' ? chain.nodes[1]! : chain.nodes[0]!;
    findings.push({
      code: 'fusion-blocked',
      severity: 'warning',
      node: module.replace(/\(\d+\)$/, ''),
      message: `${chainText} is not fused: ${chain.detail}`,
      fix: {
        kind: 'code',
        hint: shared
          ? `give each call of '${module.replace(/\(\d+\)$/, '')}' its own ${chain.types[chain.reason === 'shared-norm' ? 1 : 0]} so the chain can fuse`
          : `change the model so the chain matches '${chain.pattern}': ${chain.detail}`,
      },
    });
  }
  return findings;
}

/** Modules that neither quantize nor hold a scale of their own, so sharing them costs nothing. */
const HARMLESS_SHARED = new Set(['Flatten', 'Identity', 'Dropout', 'DeQuantStub']);

export function sharedModuleFindings(ctx: LintContext): Finding[] {
  const findings: Finding[] = [];
  for (const m of getModuleCalledCount(ctx.traced).shared) {
    const module = ctx.traced.getSubmodule(m.name);
    // prepare gives each call of a FloatFunctional its own output fake-quant
    if (module instanceof FloatFunctional || HARMLESS_SHARED.has(m.type)) continue;
    findings.push({
      code: 'shared-module',
      severity: 'warning',
      node: m.name,
      message: `'${m.name}' (${m.type}) is called ${m.count} times (nodes ${m.nodes.join(', ')}): its calls share one output scale${module.parameters().length ? ' and one weight scale' : ''}, observed over all of them`,
      fix: {
        kind: 'code',
        hint: `give each call of '${m.name}' its own ${m.type} (same weights if it must be shared)`,
      },
    });
  }
  return findings;
}
