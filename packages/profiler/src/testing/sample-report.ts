// A ProfilerReport for the report's tests and the documentation screenshot: the similarity, statistics
// and histograms are measured on TinyResNet (float vs calibrated on bayes, relu0's output scale broken to
// a tiny value), the other tables hold plausible rows of the shapes the other tools return. Some rows name
// a node with an HTML injection attempt, which the page must show as text. Not part of the package build.
import '@qtk/march-bayes';
import type { QatModule } from '@qtk/core';
import { captureNodeValues, type NodeValue } from '../values/node-values.js';
import { featuremapSimilarity } from '../compare/featuremap-similarity.js';
import type { ProfilerReport, ReportHistogram, ReportRow, ReportTable } from '../report/report-model.js';
import { similaritySection } from '../report/similarity-section.js';
import { tableOf } from '../report/table-of.js';
import { randomInputs, TinyResNet } from '@qtk/test-models';
import { stagesOf } from './stages.js';

/** A node name that is markup: shown as text, it must never become an element or run. */
export const INJECTED_NAME = '<img src=x onerror=alert(1)></script><script>alert(2)</script>';

export interface SampleReport {
  readonly report: ProfilerReport;
  /** What writeProfilerReport stores beside the page. */
  readonly toolResults: Record<string, unknown>;
}

interface Stats {
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly variance: number;
  readonly absMean: number;
}

function statsOf(v: Float32Array): Stats {
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let abs = 0;
  for (const x of v) {
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    abs += Math.abs(x);
  }
  const mean = sum / v.length;
  let sq = 0;
  for (const x of v) sq += (x - mean) ** 2;
  return { min, max, mean, variance: sq / v.length, absMean: abs / v.length };
}

/** The representable range of a per-tensor quantized node, or null. */
function clipOf(v: NodeValue | undefined): { min: number; max: number } | null {
  const q = v?.quant;
  if (q?.scale.length !== 1) return null;
  return { min: q.scale[0]! * q.quantMin, max: q.scale[0]! * q.quantMax };
}

function histogramOf(values: Float32Array, bins: number): { edges: number[]; counts: number[] } {
  const { min, max } = statsOf(values);
  const width = (max - min || 1) / bins;
  const edges = Array.from({ length: bins + 1 }, (_, i) => min + i * width);
  const counts = new Array<number>(bins).fill(0);
  for (const x of values) counts[Math.min(bins - 1, Math.floor((x - min) / width))]!++;
  return { edges, counts };
}

const byName = (values: Map<unknown, NodeValue>): Map<string, NodeValue> =>
  new Map([...values.values()].map((v) => [v.name, v]));

/** Builds the sample report (runs the models: about a second). */
export function sampleReport(): SampleReport {
  const { float, calibrated } = stagesOf(new TinyResNet(), 'bayes');
  const fq = (calibrated.getSubmodule('relu0') as QatModule).activationPostProcess!;
  (fq.scale.values() as Float32Array).fill(1e-4);
  const x = randomInputs(11, 4);
  const similarity = featuremapSimilarity(float, calibrated, x);
  const relu0 = similarity.nodes.find((n) => n.name === 'relu0')!;
  const after = similarity.nodes[relu0.index + 1]!;
  const floatValues = byName(captureNodeValues(float, [x]));
  const quantValues = byName(captureNodeValues(calibrated, [x]));

  const { plot, table: similarityTable } = similaritySection(similarity, {
    description:
      'Float vs calibrated, in execution order. "Same input" feeds the node the float inputs: the error it adds itself.',
  });

  const statRows: ReportRow[] = [];
  for (const [name, v] of quantValues) {
    const s = statsOf(v.values);
    const clip = clipOf(v);
    let saturated = 0;
    const real = floatValues.get(name)?.values;
    if (clip && real) for (const r of real) if (r < clip.min || r > clip.max) saturated++;
    statRows.push({
      name,
      min: s.min,
      max: s.max,
      mean: s.mean,
      variance: s.variance,
      absMean: s.absMean,
      saturation: clip && real ? saturated / real.length : null,
      scale: v.quant && v.quant.scale.length === 1 ? v.quant.scale[0]! : null,
      dtype: v.quant?.dtype ?? null,
      outlier: clip !== null && real !== undefined && saturated / real.length > 0.01,
    });
  }
  const statsTable: ReportTable = {
    id: 'statistics',
    title: 'Statistics per node',
    description:
      'The calibrated model on the same input. Saturation: share of the float values outside the range the scale can represent.',
    flagKey: 'outlier',
    sort: { key: 'saturation', descending: true },
    columns: [
      { key: 'name', label: 'node', kind: 'text' },
      { key: 'min', label: 'min', kind: 'number', digits: 4 },
      { key: 'max', label: 'max', kind: 'number', digits: 4 },
      { key: 'mean', label: 'mean', kind: 'number', digits: 4 },
      { key: 'variance', label: 'variance', kind: 'number', digits: 4 },
      { key: 'absMean', label: 'abs mean', kind: 'number', digits: 4 },
      { key: 'saturation', label: 'saturation', kind: 'percent' },
      { key: 'scale', label: 'scale', kind: 'number', digits: 4 },
      { key: 'dtype', label: 'dtype', kind: 'text' },
    ],
    rows: statRows,
  };

  const worst = [...similarity.nodes].sort((a, b) => a.cosine - b.cosine).slice(0, 3);
  const histograms: ReportHistogram[] = worst.map((n) => {
    const values = floatValues.get(n.firstName)!.values;
    const clip = clipOf(quantValues.get(n.name));
    return {
      title: `${n.name} (${n.type})`,
      node: n.name,
      ...histogramOf(values, 40),
      clip,
      caption: `float values; cosine ${n.cosine.toFixed(4)}${clip ? `, representable [${clip.min.toPrecision(3)}, ${clip.max.toPrecision(3)}]` : ''}`,
    };
  });

  const tables: ReportTable[] = [
    {
      id: 'first-divergence',
      title: 'First divergence',
      description: 'The first node where each adjacent pair of stages differs past the threshold.',
      columns: [
        { key: 'pair', label: 'stages', kind: 'text' },
        { key: 'node', label: 'first node', kind: 'text' },
        { key: 'cosine', label: 'cosine', kind: 'number', digits: 6 },
        { key: 'cause', label: 'likely cause', kind: 'text' },
      ],
      rows: [
        { pair: 'float → calibrated', node: 'relu0', cosine: relu0.cosine, cause: 'saturation: scale too small' },
        { pair: 'calibrated → fixed point', node: 'conv2', cosine: 0.99981, cause: 'rounding' },
        { pair: 'fixed point → onnxruntime', node: null, cosine: 1, cause: 'identical integers' },
      ],
    },
    similarityTable,
    statsTable,
    {
      id: 'weights',
      title: 'Weight comparison',
      columns: [
        { key: 'name', label: 'parameter', kind: 'text' },
        { key: 'shape', label: 'shape', kind: 'text' },
        { key: 'cosine', label: 'cosine', kind: 'number', digits: 6 },
        { key: 'maxAbsDiff', label: 'max |diff|', kind: 'number', digits: 4 },
        { key: 'scale', label: 'weight scale', kind: 'number', digits: 4 },
      ],
      rows: [
        { name: 'conv0.weight', shape: '[8, 3, 3, 3]', cosine: 0.99996, maxAbsDiff: 0.0021, scale: 0.0042 },
        { name: 'conv1.weight', shape: '[8, 8, 3, 3]', cosine: 0.99993, maxAbsDiff: 0.0016, scale: 0.0031 },
        { name: 'conv2.weight', shape: '[16, 8, 1, 1]', cosine: 0.99991, maxAbsDiff: 0.0024, scale: 0.0049 },
        { name: 'fc.weight', shape: '[4, 16]', cosine: 0.99989, maxAbsDiff: 0.0019, scale: 0.0038 },
        { name: `${INJECTED_NAME}.weight`, shape: '[2]', cosine: null, maxAbsDiff: null, scale: null },
      ],
    },
    tableOf(
      'qconfig',
      'qconfig check',
      [
        { name: 'quant', type: 'QuantStub', input: 'float32', output: 'qint8', weight: null, warning: null },
        { name: 'conv0', type: 'ConvBnReLU2d', input: 'qint8', output: 'qint8', weight: 'qint8', warning: null },
        {
          name: 'relu0',
          type: 'ReLU',
          input: 'qint8',
          output: 'qint8',
          weight: null,
          warning: 'output scale fixed at 1e-4: values above 0.0127 clip',
        },
        { name: 'conv1', type: 'ConvBnAdd2d', input: 'qint8', output: 'qint8', weight: 'qint8', warning: null },
        { name: 'fc', type: 'Linear', input: 'qint8', output: 'qint32', weight: 'qint8', warning: null },
      ],
      { columns: { name: { label: 'node' }, input: { label: 'input dtype' }, output: { label: 'output dtype' } } },
    ),
    tableOf(
      'deploy-device',
      'Deploy device',
      [
        { name: 'conv0', op: 'Conv', device: 'BPU', reason: null, cpu: false },
        { name: 'conv1', op: 'Conv', device: 'BPU', reason: null, cpu: false },
        { name: 'pool', op: 'GlobalAveragePool', device: 'BPU', reason: null, cpu: false },
        { name: 'fc', op: 'Gemm', device: 'BPU', reason: null, cpu: false },
        { name: INJECTED_NAME, op: 'Erf', device: 'CPU', reason: 'not in the bayes capability table', cpu: true },
      ],
      { columns: { name: { label: 'node' } }, flagKey: 'cpu' },
    ),
    {
      id: 'unfused',
      title: 'Unfused operations',
      columns: [
        { key: 'nodes', label: 'nodes', kind: 'text' },
        { key: 'pattern', label: 'pattern the table could fuse', kind: 'text' },
        { key: 'fix', label: 'fix', kind: 'text' },
      ],
      rows: [{ nodes: 'conv2, bn2', pattern: 'Conv2d + BatchNorm2d', fix: 'call bn2 right after conv2' }],
    },
    {
      id: 'shared',
      title: 'Shared modules',
      columns: [
        { key: 'module', label: 'module', kind: 'text' },
        { key: 'calls', label: 'calls', kind: 'number' },
      ],
      rows: [
        { module: 'relu1', calls: 2 },
        { module: INJECTED_NAME, calls: 3 },
        { module: 'head.act', calls: 12 },
      ],
    },
    {
      id: 'findings',
      title: 'Findings',
      columns: [
        { key: 'severity', label: 'severity', kind: 'text' },
        { key: 'node', label: 'node', kind: 'text' },
        { key: 'finding', label: 'finding', kind: 'text' },
        { key: 'fix', label: 'fix', kind: 'text' },
      ],
      rows: [
        { severity: 'error', node: 'relu0', finding: 'output scale too small', fix: 'recalibrate relu0' },
        { severity: 'warning', node: INJECTED_NAME, finding: 'shared module', fix: 'one module per call' },
      ],
    },
  ];

  const report: ProfilerReport = {
    version: 1,
    title: 'QTK profiler: TinyResNet, float vs calibrated on bayes',
    meta: {
      models: ['float', 'calibrated'],
      mode: 'FvsQ',
      march: 'bayes',
      date: '2026-11-25T19:00:00Z',
      inputShapes: [x.shape],
      extra: { 'model file': 'tiny-resnet.qtk' },
    },
    summary: [
      {
        severity: 'error',
        text: `First divergence float → calibrated at relu0 (cosine ${relu0.cosine.toFixed(4)}): saturation, the output scale is too small.`,
      },
      {
        severity: 'warning',
        text: `${similarity.flagged.length} nodes below cosine ${similarity.threshold}: ${similarity.flagged.join(', ')}`,
      },
      {
        severity: 'info',
        text: `Fed the float inputs, the node after relu0 is at cosine ${after.sameInput!.cosine.toFixed(4)}: its error is inherited from relu0.`,
      },
    ],
    similarity: plot,
    tables,
    histograms,
  };
  return { report, toolResults: { featuremapSimilarity: similarity, checks: { version: 1, shared: [INJECTED_NAME] } } };
}
