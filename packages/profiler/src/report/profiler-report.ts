// The tools' results of one modelProfiler run as the report's parts: summary lines (most important first),
// the similarity plot, one sortable table per tool and histograms of the worst nodes.
import { QUANT_DTYPES, type QuantDType, quantRange } from '@qtk/spec';
import type { ModelProfilerResults } from './model-profiler.js';
import type { ProfilerMode, ProfilerReport, ReportHistogram, ReportNote, ReportTable } from './report-model.js';
import { similaritySection } from './similarity-section.js';
import { tableOf } from './table-of.js';

export interface ReportContext {
  readonly mode: ProfilerMode;
  readonly march: string | null;
  readonly models: readonly string[];
  readonly inputShapes: readonly (readonly number[])[];
  readonly title: string;
  readonly histograms: number;
  readonly extra?: Readonly<Record<string, string>>;
}

const STAGE_NAMES: Record<string, string> = {
  float: 'float',
  fakeQuant: 'fake quant',
  fixed: 'fixed point',
  onnxruntime: 'onnxruntime',
};

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** A weight that quantizes poorly: over 1 % of it clipped by its scale, or its cosine to the float weight under 0.99. */
const poorWeight = (l: { readonly clipped: number; readonly cosine: number }) => l.clipped > 0.01 || l.cosine < 0.99;

function summaryOf(r: ModelProfilerResults): ReportNote[] {
  const notes: ReportNote[] = [];
  const d = r.firstDivergence;
  if (d) {
    for (const p of d.pairs) {
      const pair = `${STAGE_NAMES[p.from]} → ${STAGE_NAMES[p.to]}`;
      if (p.skipped) notes.push({ severity: 'info', text: `${pair}: not compared (${p.skipped})` });
      else if (p.node)
        notes.push({
          severity: 'error',
          text: `${pair}: first diverges at ${p.node.name} (${p.node.type})${p.diagnosis ? `: ${p.diagnosis.cause} — ${p.diagnosis.advice}` : ''}`,
        });
      else notes.push({ severity: 'info', text: `${pair}: no node diverges` });
    }
  }
  const sim = r.featuremapSimilarity;
  if (sim.flagged.length) {
    notes.push({
      severity: 'warning',
      text: `${sim.flagged.length} node(s) past the ${sim.metric} threshold ${sim.threshold}; first: ${sim.flagged[0]}`,
    });
  }
  const worstAdded = [...sim.nodes]
    .filter((n) => n.sameInput)
    .sort((a, b) => a.sameInput!.cosine - b.sameInput!.cosine)[0];
  if (worstAdded && worstAdded.sameInput!.cosine < 0.999) {
    notes.push({
      severity: 'warning',
      text: `largest error a node adds by itself: ${worstAdded.name} (cosine ${worstAdded.sameInput!.cosine.toFixed(5)} when fed the first model's inputs)`,
    });
  }
  const clipped = sim.nodes.filter((n) => (n.clipped ?? 0) > 0.001);
  if (clipped.length) {
    notes.push({
      severity: 'warning',
      text: `outputs whose scale clips the ${sim.metric === 'cosine' ? 'reference' : 'first model’s'} values (over 0.1 %): ${clipped
        .slice(0, 5)
        .map((n) => `${n.name} ${pct(n.clipped!)}`)
        .join(', ')}${clipped.length > 5 ? ', ...' : ''}`,
    });
  }
  const outliers = r.getRawFeatures.nodes.filter((n) => n.outlier.flagged);
  if (outliers.length)
    notes.push({ severity: 'info', text: `outlier nodes: ${outliers.map((n) => n.name).join(', ')}` });
  const shared = r.getModuleCalledCount?.shared ?? [];
  if (shared.length)
    notes.push({
      severity: 'warning',
      text: `shared modules (one set of scales for several calls): ${shared.map((m) => `${m.name} ×${m.count}`).join(', ')}`,
    });
  const blocked = r.checkUnfusedOperations?.blocked ?? [];
  if (blocked.length)
    notes.push({ severity: 'warning', text: `${blocked.length} fusable chain(s) stay unfused: ${blocked[0]!.detail}` });
  for (const w of r.checkQconfig?.warnings ?? []) notes.push({ severity: 'warning', text: `${w.node}: ${w.message}` });
  const badWeights = (r.compareWeights?.layers ?? []).filter(poorWeight);
  if (badWeights.length)
    notes.push({
      severity: 'warning',
      text: `weights that quantize poorly: ${badWeights.map((l) => `${l.name} (cosine ${l.cosine.toFixed(4)}, ${pct(l.clipped)} clipped)`).join(', ')}`,
    });
  const dev = r.checkDeployDevice;
  if (dev && dev.counts.CPU > 0)
    notes.push({
      severity: 'info',
      text: `devices: ${dev.counts.BPU} ops on the BPU, ${dev.counts.CPU} on the CPU, ${dev.transitions} CPU↔BPU transitions`,
    });
  notes.push({
    severity: 'info',
    text: `peak activation memory ${(r.memoryProfile.peakActivationBytes / 1024).toFixed(1)} KiB at ${r.memoryProfile.peakNode}; parameters ${(r.memoryProfile.totalParamBytes / 1024).toFixed(1)} KiB`,
  });
  return notes;
}

function tablesOf(r: ModelProfilerResults, similarity: ReportTable): ReportTable[] {
  const tables: ReportTable[] = [];
  const d = r.firstDivergence;
  if (d)
    tables.push(
      tableOf(
        'first-divergence',
        'First divergence between adjacent stages',
        d.pairs.map((p) => ({
          from: STAGE_NAMES[p.from],
          to: STAGE_NAMES[p.to],
          node: p.node?.name ?? (p.skipped ? `not compared: ${p.skipped}` : 'none'),
          type: p.node?.type ?? null,
          cause: p.diagnosis?.cause ?? null,
          sameInputCosine: p.node?.sameInputCosine ?? null,
          cosine: p.node?.cosine ?? null,
          advice: p.diagnosis?.advice ?? null,
          diverged: p.node !== null,
        })),
        {
          flagKey: 'diverged',
          description:
            'For each pair of stages, the first node (execution order) whose own error — fed the earlier stage’s inputs — passes the threshold, and the likely cause.',
        },
      ),
    );
  tables.push(similarity);
  tables.push(
    tableOf(
      'statistics',
      'Statistics per node (second model)',
      r.getRawFeatures.nodes.map((n) => ({
        name: n.name,
        type: n.type,
        dtype: n.dtype,
        scale: n.scale && n.scale.length === 1 ? n.scale[0]! : n.scale ? `${n.scale.length} per channel` : null,
        min: n.min,
        max: n.max,
        mean: n.mean,
        variance: n.variance,
        absMean: n.absMean,
        saturation: n.saturation,
        outlierRatio: n.outlier.ratio,
        outlier: n.outlier.flagged,
      })),
      {
        flagKey: 'outlier',
        columns: {
          saturation: {
            kind: 'percent',
            help: 'share of values clamped by the node’s quantized range (beyond it by more than half a step)',
          },
        },
        description: 'Range, moments and saturation of every node’s output; outlier nodes highlighted.',
      },
    ),
  );
  if (r.compareWeights)
    tables.push(
      tableOf(
        'weights',
        'Weight comparison (float vs quantized)',
        r.compareWeights.layers.map((l) => ({
          name: l.name,
          type: l.type,
          foldedBatchNorm: l.foldedBatchNorm,
          dtype: l.dtype,
          cosine: l.cosine,
          sqnr: l.sqnr,
          maxAbsDiff: l.maxAbsDiff,
          maxDiffSteps: l.maxDiffSteps,
          clipped: l.clipped,
          poor: poorWeight(l),
        })),
        { flagKey: 'poor', columns: { clipped: { kind: 'percent' } }, sort: { key: 'cosine' } },
      ),
    );
  if (r.checkQconfig) {
    const warned = new Set(r.checkQconfig.warnings.map((w) => w.node));
    tables.push(
      tableOf(
        'qconfig',
        'Quantization configuration per node',
        r.checkQconfig.nodes.map((n) => ({
          name: n.name,
          type: n.type,
          device: n.device,
          input: n.inputDtypes.join(', '),
          output: n.outputDtype,
          observer: n.activation?.observer ?? null,
          fixedScale: n.activation?.fixedScale ? n.activation.fixedScale.join(', ') : null,
          weight: n.weight ? `${n.weight.dtype}${n.weight.perChannel ? ' per channel' : ' per tensor'}` : null,
          warned: warned.has(n.name),
        })),
        { flagKey: 'warned' },
      ),
    );
    if (r.checkQconfig.warnings.length)
      tables.push(
        tableOf(
          'qconfig-warnings',
          'Quantization configuration warnings',
          r.checkQconfig.warnings.map((w) => ({ code: w.code, node: w.node, message: w.message })),
        ),
      );
  }
  if (r.checkDeployDevice)
    tables.push(
      tableOf(
        'devices',
        'Deploy device per op',
        r.checkDeployDevice.nodes.map((n) => ({
          name: n.name,
          type: n.type,
          device: n.device,
          reason: n.reason,
          detail: n.detail,
          cpu: n.device === 'CPU',
        })),
        { flagKey: 'cpu' },
      ),
    );
  if (r.checkUnfusedOperations) {
    const u = r.checkUnfusedOperations;
    tables.push(
      tableOf(
        'unfused',
        'Fusable chains in the float model',
        [
          ...u.unfused.map((c) => ({
            pattern: c.pattern,
            nodes: c.nodes.join(' → '),
            types: c.types.join(' → '),
            outcome: `prepare fuses it into ${c.fusedModule}`,
            blocked: false,
          })),
          ...u.blocked.map((c) => ({
            pattern: c.pattern,
            nodes: c.nodes.join(' → '),
            types: c.types.join(' → '),
            outcome: c.detail,
            blocked: true,
          })),
        ],
        { flagKey: 'blocked' },
      ),
    );
  }
  if (r.getModuleCalledCount)
    tables.push(
      tableOf(
        'module-calls',
        'Calls per module',
        r.getModuleCalledCount.modules.map((m) => ({
          name: m.name,
          type: m.type,
          count: m.count,
          shared: m.count > 1,
        })),
        { flagKey: 'shared', sort: { key: 'count', descending: true } },
      ),
    );
  tables.push(
    tableOf(
      'memory',
      'Memory per node (second model)',
      r.memoryProfile.nodes.map((n) => ({
        name: n.name,
        type: n.type,
        dtype: n.dtype,
        activationBytes: n.activationBytes,
        paramBytes: n.paramBytes,
        constantBytes: n.constantBytes,
        liveBytes: n.liveBytes,
        peak: n.name === r.memoryProfile.peakNode,
      })),
      { flagKey: 'peak' },
    ),
  );
  return tables;
}

/**
 * Histograms of the `count` worst nodes — by the error each adds itself (same-input cosine), else by its
 * accumulated cosine — of the second model's values, its representable range marked.
 */
function histogramsOf(r: ModelProfilerResults, count: number): ReportHistogram[] {
  const features = new Map(r.getRawFeatures.nodes.map((n) => [n.name, n]));
  const added = (n: ModelProfilerResults['featuremapSimilarity']['nodes'][number]) => n.sameInput?.cosine ?? n.cosine;
  const worst = [...r.featuremapSimilarity.nodes]
    .sort((a, b) => added(a) - added(b) || a.cosine - b.cosine)
    .slice(0, count);
  const out: ReportHistogram[] = [];
  for (const n of worst) {
    const f = features.get(n.name);
    if (!f || f.histogram.counts.length === 0) continue;
    const range = (QUANT_DTYPES as readonly string[]).includes(f.dtype) ? quantRange(f.dtype as QuantDType) : null;
    const clip =
      range && f.scale && f.scale.length === 1
        ? { min: range.quantMin * f.scale[0]!, max: range.quantMax * f.scale[0]! }
        : null;
    out.push({
      title: `${n.name} (${n.type})`,
      node: n.name,
      edges: f.histogram.edges,
      counts: f.histogram.counts,
      clip,
      caption: `cosine ${n.cosine.toFixed(5)}${f.saturation !== null ? `, ${pct(f.saturation)} saturated` : ''}${f.outlier.flagged ? ', outlier' : ''}`,
    });
  }
  return out;
}

/** The report of one modelProfiler run. */
export function profilerReportOf(r: ModelProfilerResults, ctx: ReportContext): ProfilerReport {
  const { plot, table } = similaritySection(r.featuremapSimilarity);
  return {
    version: 1,
    title: ctx.title,
    meta: {
      models: ctx.models,
      mode: ctx.mode,
      ...(ctx.march ? { march: ctx.march } : {}),
      date: new Date().toISOString(),
      inputShapes: ctx.inputShapes,
      ...(ctx.extra ? { extra: ctx.extra } : {}),
    },
    summary: summaryOf(r),
    similarity: plot,
    tables: tablesOf(r, table),
    histograms: histogramsOf(r, ctx.histograms),
  };
}
