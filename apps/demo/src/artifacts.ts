import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { saveModelFileSync } from '@qtk/core/node';
import { symbolicTrace } from '@qtk/ir';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { exportOnnx } from '@qtk/onnx/node';
import { Tensor } from '@qtk/tensor';
import type { DeploymentCheck } from './deployment.js';
import type { ProfileCheck } from './profiling.js';
import type { DemoResult } from './pipeline.js';
import { formatQconfigReport, qconfigReport } from './qconfig-report.js';
import { formatSummary, summaryJson } from './summary.js';

/** File names inside the output folder. */
export const ARTIFACTS = {
  summaryText: 'summary.txt',
  summaryJson: 'summary.json',
  qconfigJson: 'qconfig-report.json',
  qconfigText: 'qconfig-report.txt',
  floatOnnx: 'reference-net-float.onnx',
  qatCheckpoint: 'qat-checkpoint.qtk',
  fixedPoint: 'fixed-point.qtk',
} as const;

/** Writes through @qtk/nn's atomic writer, so a crash never leaves half a file (packages/nn/docs/saving-files.md). */
export function writeAtomic(path: string, data: string | Uint8Array): void {
  writeFileAtomicSync(path, data);
}

/** Writes every artifact of a demo run to `dir` and returns the paths written. */
export function writeArtifacts(
  r: DemoResult,
  dir: string,
  deployment?: DeploymentCheck,
  profile?: ProfileCheck,
): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const put = (name: string, data: string | Uint8Array) => {
    const p = join(dir, name);
    writeAtomic(p, data);
    written.push(p);
  };
  put(ARTIFACTS.summaryText, `${formatSummary(r, deployment, profile)}\n`);
  put(ARTIFACTS.summaryJson, `${JSON.stringify(summaryJson(r, deployment, profile), null, 2)}\n`);
  if (deployment) written.push(deployment.path);
  if (profile) written.push(profile.html);

  const calib = qconfigReport(r.calibrated);
  const qat = r.qat ? qconfigReport(r.qat) : null;
  put(
    ARTIFACTS.qconfigJson,
    `${JSON.stringify({ version: 1, observer: r.options.observer, march: r.options.march, calibration: calib, qat }, null, 2)}\n`,
  );
  let text = formatQconfigReport(`Calibration model (${r.options.observer} activation observer)`, calib);
  if (qat) text += `\n${formatQconfigReport('QAT model (converted to fixed point)', qat)}`;
  put(ARTIFACTS.qconfigText, text);

  const example = new Tensor({ data: new Float32Array(28 * 28), shape: [1, 1, 28, 28], dtype: 'float32' });
  const onnxPath = join(dir, ARTIFACTS.floatOnnx);
  exportOnnx(symbolicTrace(r.float.eval()), example, onnxPath, { inputNames: ['image'], outputNames: ['logits'] });
  written.push(onnxPath);

  // QTK's versioned model files; with --qat-steps 0 the "QAT checkpoint" is the calibrated model
  const meta = {
    input: { name: 'image', shape: [null, 1, 28, 28], range: [-1, 1] },
    classes: 10,
    summary: summaryJson(r),
  };
  const qatPath = join(dir, ARTIFACTS.qatCheckpoint);
  saveModelFileSync(r.qat ?? r.calibrated, qatPath, { kind: 'qat', meta });
  written.push(qatPath);
  const fixedPath = join(dir, ARTIFACTS.fixedPoint);
  saveModelFileSync(r.fixedPoint, fixedPath, { meta }); // kind and march: recorded by convertFx
  written.push(fixedPath);
  return written;
}
