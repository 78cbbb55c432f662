// Linter rules for the qconfig dict and hybridDict: names and types that match no module (a qconfig
// typo silently leaves the default in place), and output layers that are not high precision.
import { coversPath, moduleNameRecord, moduleNamesOf, weightedLayer } from '@qtk/core';
import type { Node } from '@qtk/ir';
import { closeNames, didYouMean } from '@qtk/tensor';
import { displayName, isDeQuantStub, type LintContext } from './lint-context.js';
import { deployedOps } from './lint-devices.js';
import type { Finding } from './lint-findings.js';

/** The entries that name no module of `known` (by `covers`), each with the closest known path, if any. */
function unknownEntries(
  entries: Iterable<string>,
  known: readonly string[],
  covers: (entry: string, path: string) => boolean,
): { entry: string; closest: string[] }[] {
  return [...entries]
    .filter((entry) => !known.some((p) => covers(entry, p)))
    .map((entry) => ({ entry, closest: closeNames(entry, known, 1) }));
}

export function qconfigNameFindings(ctx: LintContext): Finding[] {
  const findings: Finding[] = [];
  const modules = [...ctx.traced.namedModules(), ...ctx.gm.namedModules()];
  const known = moduleNamesOf([ctx.traced, ctx.gm]);
  for (const { entry: key, closest } of unknownEntries(
    Object.keys(moduleNameRecord(ctx.qconfigDict)).filter((k) => k !== ''),
    known,
    coversPath,
  )) {
    const close = closest[0];
    findings.push({
      code: 'unknown-qconfig-name',
      severity: 'error',
      node: key,
      message: `qconfigDict.moduleName['${key}'] names no module of the model (prepareQatFx refuses it)${didYouMean(closest)}`,
      fix: {
        kind: 'qconfig',
        qconfigDict: { moduleName: close ? { [close]: { renamedFrom: key } } : { [key]: 'remove' } },
      },
    });
  }
  const isOrContains = (entry: string, p: string) => p === entry || p.startsWith(`${entry}.`);
  for (const { entry, closest } of unknownEntries(ctx.hybridDict.moduleName ?? [], known, isOrContains)) {
    const close = closest[0];
    findings.push({
      code: 'unknown-hybrid-name',
      severity: 'error',
      node: entry,
      message: `hybridDict.moduleName has '${entry}', which names no module of the model (prepareQatFx refuses it)${didYouMean(closest)}`,
      fix: {
        kind: 'hybrid',
        hybridDict: close ? { moduleName: [close], removeModuleName: [entry] } : { removeModuleName: [entry] },
      },
    });
  }
  for (const [cls] of ctx.qconfigDict.moduleType ?? []) {
    if (modules.some(([, m]) => m instanceof cls)) continue;
    findings.push({
      code: 'unused-qconfig-type',
      severity: 'info',
      node: cls.name,
      message: `qconfigDict.moduleType has an entry for ${cls.name}, but no module of the model is one`,
      fix: { kind: 'qconfig', qconfigDict: { moduleType: { [cls.name]: 'remove' } } },
    });
  }
  return findings;
}

const SHAPE_ONLY = new Set([
  'Flatten',
  'Identity',
  'Dropout',
  'flatten',
  'reshape',
  'view',
  'permute',
  'transpose',
  'contiguous',
  'squeeze',
  'unsqueeze',
]);

function isShapeOnly(ctx: LintContext, n: Node): boolean {
  const m = ctx.moduleAt(n);
  return n.inputNodes.length === 1 && SHAPE_ONLY.has(m ? m.constructor.name : n.target);
}

/** The conv-family layers whose outputs the model returns (through DeQuantStubs and shape-only ops). */
function outputLayers(ctx: LintContext): Node[] {
  const deployed = new Set(deployedOps(ctx));
  const ends = ctx.gm.graph.nodes.flatMap((n) => (n.op === 'output' || isDeQuantStub(ctx, n) ? n.inputNodes : []));
  const layers: Node[] = [];
  for (let n of ends) {
    while (isShapeOnly(ctx, n)) n = n.inputNodes[0]!;
    const m = ctx.moduleAt(n);
    if (deployed.has(n) && m && weightedLayer(m) && !layers.includes(n)) layers.push(n);
  }
  return layers;
}

export function outputPrecisionFindings(ctx: LintContext): Finding[] {
  const findings: Finding[] = [];
  if (ctx.march.capabilities.highPrecisionOutputDtypes.length === 0) return findings;
  for (const layer of outputLayers(ctx)) {
    if (ctx.hybridMatcher.match(layer)) continue;
    const { qconfig } = ctx.qconfigOf(layer);
    if (!qconfig?.activation) continue;
    const name = displayName(layer);
    findings.push({
      code: 'output-not-high-precision',
      severity: 'warning',
      node: name,
      message: `the output layer '${name}' is quantized to ${qconfig.activation.options.dtype ?? 'qint8'}; march '${ctx.march.id}' can give it a high-precision (int32) output, which keeps the model's result exact`,
      fix: { kind: 'qconfig', qconfigDict: { moduleName: { [name]: 'high-precision-output' } } },
    });
  }
  return findings;
}
