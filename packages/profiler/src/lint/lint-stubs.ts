// Linter rules for the quantized part's borders: a graph input that reaches deployed ops without a
// QuantStub, and a model output that leaves a quantized op without a DeQuantStub.
import type { Node } from '@qtk/ir';
import { displayName, isDeQuantStub, isQuantStub, type LintContext } from './lint-context.js';
import { deployedOps } from './lint-devices.js';
import type { Finding } from './lint-findings.js';

export function quantStubFindings(ctx: LintContext): Finding[] {
  const deployed = new Set(deployedOps(ctx));
  const findings: Finding[] = [];
  for (const input of ctx.gm.graph.placeholders) {
    const seen = new Set<Node>();
    const stack = [...input.users];
    let reached: Node | null = null;
    while (stack.length && !reached) {
      const n = stack.pop()!;
      if (seen.has(n) || isQuantStub(ctx, n)) continue;
      seen.add(n);
      if (deployed.has(n)) reached = n;
      stack.push(...n.users);
    }
    if (!reached) continue;
    findings.push({
      code: 'missing-quant-stub',
      severity: ctx.hybrid ? 'info' : 'error',
      node: input.name,
      message: `graph input '${input.name}' reaches '${displayName(reached)}' without passing a QuantStub, so it has no input scale${ctx.hybrid ? '; hybrid mode puts a QuantStub before the first BPU op that reads it' : ''}`,
      fix: { kind: 'prepare-option', option: { inputQuantStubs: true } },
    });
  }
  return findings;
}

export function deQuantStubFindings(ctx: LintContext): Finding[] {
  const deployed = new Set(deployedOps(ctx));
  const findings: Finding[] = [];
  for (const out of ctx.gm.graph.nodes.filter((n) => n.op === 'output')) {
    for (const producer of out.inputNodes) {
      if (isDeQuantStub(ctx, producer) || !(deployed.has(producer) || isQuantStub(ctx, producer))) continue;
      // an op the hybridDict keeps on the CPU returns float values
      if (ctx.hybridMatcher.match(producer)) continue;
      const name = displayName(producer);
      findings.push({
        code: 'missing-dequant-stub',
        severity: 'warning',
        node: name,
        message: `the model returns the output of '${name}' without a DeQuantStub: after conversion it returns quantized integers instead of float values`,
        fix: { kind: 'code', hint: `add a DeQuantStub to the model and return dequant(${name}(...))` },
      });
    }
  }
  return findings;
}
