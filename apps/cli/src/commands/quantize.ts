import { statSync } from 'node:fs';
import type { AdaRoundResult, BiasCorrectionResult } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { marches, opOfNode, type QuantDType } from '@qtk/spec';
import { noGrad, type Tensor } from '@qtk/tensor';
import { checkDeployDevice, type DeployDeviceReport, fragmentationWarning } from '@qtk/hybrid';
import { agreement, agreementText } from '../agreement.js';
import { parseArgs, type CommandSpec } from '../args.js';
import { firstRows } from '../batches.js';
import { CALIBRATE_OPTIONS, calibrateOnnxModel, checkCalibrateOptions, stageLabel } from '../calibrated-model.js';
import type { CliIo } from '../io.js';
import { ioNamesOf } from '../io-names.js';
import { saveModel } from '../model-file-io.js';
import { checkOutPath } from '../out-path.js';
import { type CalibrateQconfig, QCONFIG_DETAILS } from '../qconfig-options.js';
import { deviceSummary } from '../hybrid-options.js';
import { ModelNames } from '../model-names.js';
import { SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { inputShapesMeta } from '../sample-inputs.js';

/** Samples the fixed-point / fake-quant agreement is measured on (at most one calibration batch). */
const AGREEMENT_SAMPLES = 4;

export const quantizeSpec: CommandSpec = {
  name: 'quantize',
  summary: 'Calibrates an ONNX model on a folder of samples, converts it for a march and saves the fixed-point model.',
  positionals: [{ name: 'MODEL', description: 'the float ONNX model (.onnx; float32 inputs, one or several)' }],
  options: {
    calib: CALIBRATE_OPTIONS.calib!,
    march: CALIBRATE_OPTIONS.march!,
    observer: CALIBRATE_OPTIONS.observer!,
    out: {
      type: 'string',
      value: 'FILE',
      description: 'where to write the fixed-point model (QTK model file) (required)',
      required: 'where to write the fixed-point model',
    },
    ...CALIBRATE_OPTIONS,
    'keep-float': {
      type: 'string',
      value: 'NAMES',
      description:
        'comma-separated module names to keep float (step-wise quantization): each runs between a dequantize and a quantize',
    },
  },
  details: `A .npy file holds one sample (the model's input shape without the batch axis) or a batch of them.
${SEVERAL_INPUTS_DETAILS}
Images are converted to the model's channel count (greyscale or RGB), resized to --size and normalised
with --mean/--std. Calibration only: no QAT. Every operator the march cannot convert is listed at once;
--keep-float keeps named modules (and what they contain) in float instead; --hybrid runs every
operator the march cannot run on the CPU (a heterogeneous model) and prints where each node runs.
${QCONFIG_DETAILS}`,
};

export async function runQuantize(argv: readonly string[], io: CliIo): Promise<number> {
  const t0 = performance.now();
  const args = parseArgs(quantizeSpec, argv);
  const o = args.options;
  const modelPath = args.positionals[0]!;
  checkOutPath(String(o.out), [{ path: modelPath, what: 'input model' }]);
  checkCalibrateOptions(o, 'quantize');
  const keepFloat = parseNames(o['keep-float']);
  const c = await calibrateOnnxModel(modelPath, o, io, {
    keepFloat,
  });
  const { prepared, samples, inputs, warnings, hybrid, cpuOps, cpuNodes, observer, inputScale } = c;
  const marchId = c.march;
  const pre = c.preprocess;
  const nBatches = c.batches;
  const batch = Number(o.batch);
  const fixed = c.fixed;

  // Agreement of the fixed-point model with the calibrated fake-quant model on the first samples: a check that
  // conversion kept the outputs (and that they are finite), for which a few samples do. Both passes run on QTK's
  // kernels: with calibration on onnxruntime, 8 samples of a 224×224 EfficientNet-B0 took 9.8 s of a 24 s quantize.
  const checked = Math.min(batch, AGREEMENT_SAMPLES);
  const first = firstRows(samples, checked);
  const k = first[0]!.shape[0]!;
  const where = `the first ${k} calibration sample${k === 1 ? '' : 's'}`;
  const fq = noGrad(() => floatOf(prepared.call(...first)));
  const fp = noGrad(() => floatOf(fixed.call(...first)));
  const maxDiff = agreement(fq, fp, modelPath, warnings, where);

  const meta = {
    tool: 'qtk quantize',
    source: modelPath,
    march: marchId,
    observer,
    ...inputShapesMeta(inputs),
    inputScale: inputScale === 'auto' ? 'auto' : inputScale,
    preprocess: { mean: pre.mean, std: pre.std, ...(pre.size ? { size: pre.size } : {}) },
    calibration: {
      dir: String(o.calib),
      samples: samples[0]!.shape[0],
      batches: nBatches,
      engine: c.calibrationEngine,
    },
    ...(keepFloat.length ? { keepFloat } : {}),
    ...(o['bias-correction'] ? { biasCorrection: true } : {}),
    ...(o['analytic-bias-correction'] ? { biasCorrection: 'analytic' } : {}),
    ...(o.adaround ? { adaround: { iterations: Number(o['adaround-iters'] ?? 1000) } } : {}),
    ...(c.equalizedPairs !== null ? { equalizedPairs: c.equalizedPairs } : {}),
    ...(c.qconfigs.highPrecision.length ? { highPrecisionOutputs: c.qconfigs.highPrecision } : {}),
    ...(c.qconfigs.int16.length ? { int16: c.qconfigs.int16 } : {}),
    ...(hybrid ? { hybrid: { cpuOps, cpuNodes } } : {}),
    io: ioNamesOf(c.float), // the ONNX input and output names, which qtk export keeps
  };
  const out = String(o.out);
  io.out(`${stageLabel('writing')}${out}\n`);
  saveModel(fixed, out, meta);

  const report = hybrid ? checkDeployDevice(fixed) : null;
  const fragmented = report ? fragmentationWarning(report, marchesRunning(fixed, report, marchId)) : null;
  if (fragmented) warnings.push(fragmented);
  const summary = summarize(prepared, fixed);
  const lines = [
    `march:        ${marchId}`,
    `observer:     ${observer} (activations), min_max per channel (weights)${o.adaround ? '; weight rounding learnt (AdaRound)' : ''}${o['bias-correction'] ? "; biases corrected for the weights' quantization" : ''}`,
    ...(o['analytic-bias-correction'] && c.biasCorrection ? [analyticBiasLine(c.biasCorrection)] : []),
    ...(c.equalizedPairs !== null
      ? [`equalized:    ${c.equalizedPairs} conv/linear pair(s) (cross-layer equalization)`]
      : []),
    ...(c.adaround ? [adaroundLine(c.adaround)] : []),
    `engine:       calibration in ${c.calibrationEngine}`,
    `nodes:        ${summary.converted} converted to fixed point (${summary.modules})`,
    ...(keepFloat.length ? [`kept float:   ${keepFloat.join(', ')}`] : []),
    ...precisionLines(c.qconfigs),
    ...(report ? [deviceSummary(report, new ModelNames(fixed))] : []),
    `dtypes:       activations ${summary.activationDtypes.join(', ') || '-'}; weights ${summary.weightDtypes.join(', ') || '-'}`,
    `scales:       activations ${range(summary.activationScales)}; weights ${range(summary.weightScales)}`,
    `agreement:    ${agreementText(maxDiff, fq, where)}`,
    `warnings:     ${warnings.length}${warnings.length ? `\n${warnings.map((w) => `  - ${w}`).join('\n')}` : ''}`,
    `written:      ${out} (${statSync(out).size} bytes, fixed-point)`,
    `time:         ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  ];
  io.out(`${lines.join('\n')}\n`);
  return 0;
}

function precisionLines(q: CalibrateQconfig): string[] {
  const parts = [
    ...(q.highPrecision.length ? [`int32 (high-precision) outputs: ${q.highPrecision.join(', ')}`] : []),
    ...(q.int16.length ? [`int16: ${q.int16.join(', ')}`] : []),
  ];
  return parts.length ? [`precision:    ${parts.join('; ')}`] : [];
}

function parseNames(value: unknown): string[] {
  if (value === undefined) return [];
  return String(value)
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/** A model output as a float tensor (a QTensor output is dequantized). */
export function floatOf(y: unknown): Tensor {
  const v = Array.isArray(y) ? y[0] : y;
  return v instanceof QTensor ? v.dequantize() : (v as Tensor);
}

function range(v: readonly number[]): string {
  if (!v.length) return '-';
  let lo = Infinity;
  let hi = -Infinity;
  for (const x of v) {
    lo = Math.min(lo, x);
    hi = Math.max(hi, x);
  }
  return `${lo.toExponential(3)} .. ${hi.toExponential(3)} (${v.length} scales)`;
}

interface Summary {
  converted: number;
  modules: string;
  activationDtypes: QuantDType[];
  weightDtypes: QuantDType[];
  activationScales: number[];
  weightScales: number[];
}

function summarize(prepared: GraphModule, fixed: GraphModule): Summary {
  const classes = new Map<string, number>();
  let converted = 0;
  for (const node of fixed.graph.nodes) {
    if (node.op !== 'call_module' || node.meta?.convertedFrom === undefined) continue;
    if (node.meta.deployDevice === 'CPU') continue; // a float op of a heterogeneous model
    converted++;
    const cls = fixed.getSubmodule(node.target).constructor.name;
    classes.set(cls, (classes.get(cls) ?? 0) + 1);
  }
  const s: Summary = {
    converted,
    modules: [...classes].map(([c, n]) => `${n} ${c}`).join(', '),
    activationDtypes: [],
    weightDtypes: [],
    activationScales: [],
    weightScales: [],
  };
  for (const [name, m] of prepared.namedModules()) {
    if (!(m instanceof FakeQuantize)) continue;
    const q = m.calculateQparams();
    const weight = /weight/i.test(name.split('.').pop() ?? '');
    const dtypes = weight ? s.weightDtypes : s.activationDtypes;
    if (!dtypes.includes(q.dtype)) dtypes.push(q.dtype);
    (weight ? s.weightScales : s.activationScales).push(...q.scale);
  }
  return s;
}

/** The other registered marches whose capability tables list every op the partition put on the CPU. */
function marchesRunning(fixed: GraphModule, report: DeployDeviceReport, current: string): string[] {
  const cpu = new Set(report.nodes.filter((n) => n.device === 'CPU').map((n) => n.name));
  const ops = new Set(fixed.graph.nodes.filter((n) => cpu.has(n.name)).flatMap((n) => opOfNode(fixed, n)?.op ?? []));
  return marches
    .names()
    .filter((m) => m !== current)
    .filter((m) => [...ops].every((op) => marches.get(m).capabilities.ops.some((o) => o.op === op)));
}

/** The summary line of --analytic-bias-correction: the layers corrected, and why the others were not. */
function analyticBiasLine(r: BiasCorrectionResult): string {
  const skipped = r.skipped ?? [];
  const first = skipped[0] ? ` (e.g. '${skipped[0].name}': ${skipped[0].reason})` : '';
  return `bias:         ${r.layers.length} layer(s) corrected from BatchNorm statistics, ${skipped.length} left as they were${first}`;
}

/** The summary line of --adaround: weights rounded the other way, and the output error against nearest rounding. */
function adaroundLine(r: AdaRoundResult): string {
  const flipped = r.layers.reduce((n, l) => n + l.flipped, 0);
  const weights = r.layers.reduce((n, l) => n + l.weights, 0);
  const ratios = r.layers.filter((l) => l.mseNearest > 0).map((l) => l.mseAdaRound / l.mseNearest);
  const mean = ratios.length ? ratios.reduce((a, b) => a + b, 0) / ratios.length : 1;
  const skipped = r.skipped.length
    ? `; ${r.skipped.length} left to nearest (${r.skipped.map((s) => s.name).join(', ')})`
    : '';
  return (
    `adaround:     ${r.layers.length} layer(s), ${flipped} of ${weights} weights rounded the other way; ` +
    `layer output error ${(100 * (mean - 1)).toFixed(0)} % against rounding to nearest (mean over layers)${skipped}`
  );
}
