import type { DeploymentCheck } from './deployment.js';
import type { ProfileCheck } from './profiling.js';
import type { DemoResult } from './pipeline.js';

/** A plain text table: the first row is the header, columns left-aligned except numbers. */
export function formatTable(rows: string[][], rightAlign: (col: number) => boolean = () => false): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((cell, c) => (rightAlign(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join('\n');
}

const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(2)} %`);
const sec = (x: number) => `${x.toFixed(1)} s`;

/**
 * The summary table the demo prints: accuracy per stage, fake-quant vs fixed-point agreement and, when
 * given, the integer ONNX file in onnxruntime-node against QTK's fixed-point model.
 */
export function formatSummary(r: DemoResult, deployment?: DeploymentCheck, profile?: ProfileCheck): string {
  const o = r.options;
  const rows = [
    ['stage', 'test top-1', 'time', 'what (time includes the test evaluation)'],
    ['float', pct(r.accuracy.float), sec(r.seconds.float), `reference network, ${r.weightsSource}`],
    [
      'calibration',
      pct(r.accuracy.calibration),
      sec(r.seconds.calibration),
      `fused, ${o.observer} observer, ${Math.min(o.calibImages, r.trainImages)} images, fake-quant`,
    ],
    [
      'QAT',
      pct(r.accuracy.qat),
      sec(r.seconds.qat),
      o.qatSteps > 0 ? `${o.qatSteps} steps from calibration (LSQ activations), fake-quant` : 'skipped (--qat-steps 0)',
    ],
    [
      'fixed point',
      pct(r.accuracy.fixedPoint),
      sec(r.seconds.fixedPoint),
      `${o.march} march, integer model converted from ${o.qatSteps > 0 ? 'QAT' : 'calibration'}`,
    ],
    [
      'agreement',
      pct(r.agreement),
      '',
      `top-1 agreement, fake-quant (${o.qatSteps > 0 ? 'QAT' : 'calibration'}) vs fixed point`,
    ],
  ];
  if (deployment) {
    rows.push([
      'integer ONNX',
      pct(deployment.accuracy.onnxruntime),
      sec(deployment.seconds.onnxruntime),
      `fixed point exported, run in onnxruntime-node: ${pct(deployment.identicalOutputs)} of outputs bit-identical to QTK`,
    ]);
  }
  if (profile) {
    rows.push([
      'profiler',
      '',
      sec(profile.seconds),
      `${profile.html}: ${profile.nodes} nodes compared, ${profile.flagged.length} below cosine 0.99`,
    ]);
  }
  const title = `QTK demo: ${r.testImages} test images, ${r.trainImages} training images (${o.data ?? 'embedded Fashion-MNIST subset'})`;
  return `${title}\n\n${formatTable(rows, (c) => c === 1 || c === 2)}`;
}

/** The summary's numbers as JSON-ready data (summary.json in the output folder). */
export function summaryJson(
  r: DemoResult,
  deployment?: DeploymentCheck,
  profile?: ProfileCheck,
): Record<string, unknown> {
  const { options: o } = r;
  return {
    version: 1,
    data: o.data ?? 'embedded-subset',
    trainImages: r.trainImages,
    testImages: r.testImages,
    weights: r.weightsSource,
    observer: o.observer,
    march: o.march,
    qatSteps: o.qatSteps,
    calibImages: Math.min(o.calibImages, r.trainImages),
    accuracy: r.accuracy,
    agreement: r.agreement,
    qatFinalLoss: r.qatLoss,
    seconds: r.seconds,
    ...(deployment
      ? {
          integerOnnx: {
            file: deployment.path,
            identicalOutputs: deployment.identicalOutputs,
            accuracy: deployment.accuracy.onnxruntime,
            seconds: deployment.seconds,
            intermediates: deployment.intermediates,
          },
        }
      : {}),
    ...(profile
      ? {
          profiler: {
            file: profile.html,
            nodes: profile.nodes,
            flagged: profile.flagged,
            worstSameInput: profile.worstSameInput,
            seconds: profile.seconds,
          },
        }
      : {}),
  };
}
