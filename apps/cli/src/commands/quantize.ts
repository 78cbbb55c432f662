import { statSync } from 'node:fs';
import { calibrate, ConversionError, convertFx, prepareQatFx } from '@qtk/core';
import { FakeQuantize, getDefaultQconfig } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { marches, observers, type QuantDType } from '@qtk/spec';
import { noGrad, type Tensor } from '@qtk/tensor';
import { agreement } from '../agreement.js';
import { parseArgs, parseNumber, type CommandSpec } from '../args.js';
import { batchesOf } from '../batches.js';
import { listSampleFiles, loadSamples } from '../data/samples.js';
import { CliError, type CliIo } from '../io.js';
import { saveModel } from '../model-file-io.js';
import { loadOnnx, MAX_ELEMENTS_OPTION, parseShape, sampleShapeOf } from '../model-input.js';
import { checkOutPath } from '../out-path.js';
import { deviceSummary, hybridDictFrom, splitNames } from '../hybrid-options.js';
import { checkDeployDevice } from '@qtk/hybrid';
import { PREPROCESS_OPTIONS, preprocessFrom } from '../preprocess-options.js';

export const quantizeSpec: CommandSpec = {
  name: 'quantize',
  summary: 'Calibrates an ONNX model on a folder of samples, converts it for a march and saves the fixed-point model.',
  positionals: [{ name: 'MODEL', description: 'the float ONNX model (.onnx, one input)' }],
  options: {
    calib: {
      type: 'string',
      value: 'DIR',
      description: 'calibration samples: .npy tensors and/or PNG/JPEG images (required)',
    },
    march: {
      type: 'string',
      value: 'ID',
      description: 'the march to convert for (bayes, bernoulli2)',
      default: 'bayes',
    },
    observer: {
      type: 'string',
      value: 'NAME',
      description: 'activation observer (min_max, mse, percentile, kl, mix, ...); weights use per-channel min_max',
      default: 'min_max',
    },
    out: {
      type: 'string',
      value: 'FILE',
      description: 'where to write the fixed-point model (QTK model file) (required)',
    },
    'input-shape': {
      type: 'string',
      value: 'N,C,H,W',
      description: "the model's input shape, when the ONNX file leaves dims free",
    },
    'input-scale': {
      type: 'string',
      value: 'S|auto',
      description: "the input quantization scale ('1/128' suits inputs in [-1, 1]; 'auto' calibrates it)",
      default: '1/128',
    },
    batch: { type: 'number', value: 'N', description: 'calibration batch size', default: 32, integer: true, min: 1 },
    limit: { type: 'number', value: 'N', description: 'use at most N calibration samples', integer: true, min: 1 },
    'skip-nonfinite': {
      type: 'boolean',
      description: 'leave out calibration samples holding NaN or ±Infinity (counted in the summary) instead of failing',
    },
    'keep-float': {
      type: 'string',
      value: 'NAMES',
      description:
        'comma-separated module names to keep float (step-wise quantization): each runs between a dequantize and a quantize',
    },
    hybrid: {
      type: 'boolean',
      description:
        'heterogeneous model: operators the march cannot run stay float on the CPU, with quantize / dequantize where they meet the BPU',
    },
    'cpu-ops': {
      type: 'string',
      value: 'OP[,OP...]',
      description:
        'with --hybrid: also run every node of these operators on the CPU (names as qtk inspect prints them)',
    },
    'cpu-nodes': {
      type: 'string',
      value: 'NAME[,NAME...]',
      description: 'with --hybrid: also run these nodes (module names, as qtk inspect prints them) on the CPU',
    },
    ...PREPROCESS_OPTIONS,
    ...MAX_ELEMENTS_OPTION,
  },
  details: `A .npy file holds one sample (the model's input shape without the batch axis) or a batch of them.
Images are converted to the model's channel count (greyscale or RGB), resized to --size and normalised
with --mean/--std. Calibration only: no QAT. Every operator the march cannot convert is listed at once;
--keep-float keeps named modules (and what they contain) in float instead; --hybrid runs every
operator the march cannot run on the CPU (a heterogeneous model) and prints where each node runs.`,
};

export function runQuantize(argv: readonly string[], io: CliIo): number {
  const t0 = performance.now();
  const args = parseArgs(quantizeSpec, argv);
  const o = args.options;
  const modelPath = args.positionals[0]!;
  if (o.calib === undefined)
    throw new CliError("missing --calib DIR (the calibration samples)\nrun 'qtk quantize --help' for the options", {
      exitCode: 2,
    });
  if (o.out === undefined)
    throw new CliError(
      "missing --out FILE (where to write the fixed-point model)\nrun 'qtk quantize --help' for the options",
      { exitCode: 2 },
    );
  checkOutPath(String(o.out), [{ path: modelPath, what: 'input model' }]);
  const marchId = String(o.march);
  if (!marches.has(marchId))
    throw new CliError(`unknown march '${marchId}' (registered: ${marches.names().join(', ')})`, { exitCode: 2 });
  const observer = String(o.observer);
  if (!observers.has(observer))
    throw new CliError(`unknown observer '${observer}' (registered: ${observers.names().join(', ')})`, { exitCode: 2 });
  const batch = Number(o.batch);
  if (!Number.isInteger(batch) || batch < 1)
    throw new CliError(`--batch must be a positive integer, got ${o.batch}`, { exitCode: 2 });
  const inputScale = parseInputScale(String(o['input-scale']));
  const limit = o.limit !== undefined ? Number(o.limit) : Infinity;

  const gm = loadOnnx(modelPath, o['max-elements']);
  const inputShape = o['input-shape'] !== undefined ? parseShape(String(o['input-shape']), '--input-shape') : undefined;
  const sampleShape = sampleShapeOf(gm, inputShape);
  const pre = preprocessFrom(o);
  const files = listSampleFiles(String(o.calib), 'calibration');
  const nonFinite = { skip: o['skip-nonfinite'] === true, hint: 'or pass --skip-nonfinite to leave such samples out' };
  const { tensor: samples, files: used, skipped } = loadSamples(files, sampleShape, pre, limit, nonFinite);
  const left = skipped ? `; ${skipped} sample(s) holding NaN or ±Infinity left out` : '';
  io.out(
    `calibration: ${samples.shape[0]} samples of shape [${samples.shape.slice(1).join(', ')}] from ${used.length} file(s) in ${o.calib}${left}\n`,
  );

  const warnings: string[] = [];
  const onWarning = (m: string) => warnings.push(m);
  const constant = constantValue(samples);
  if (constant !== null)
    onWarning(
      `the calibration data is constant (every value is ${constant}): the scales see a single value; calibrate on representative inputs`,
    );
  const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
  const keepFloat = parseNames(o['keep-float']);
  const moduleName = Object.fromEntries(keepFloat.map((n) => [n, null]));
  const hybrid = o.hybrid === true;
  const cpuOps = splitNames(o['cpu-ops']);
  const cpuNodes = splitNames(o['cpu-nodes']);
  if (!hybrid && (cpuOps.length || cpuNodes.length))
    throw new CliError('--cpu-ops and --cpu-nodes need --hybrid (a heterogeneous model)', { exitCode: 2 });
  const hybridDict = hybrid ? hybridDictFrom(gm, cpuOps, cpuNodes) : undefined;
  const prepared = prepareQatFx(
    gm,
    { global: qconfig, moduleName },
    {
      march: marchId,
      inputQuantStubs: inputScale === 'auto' ? true : { scale: inputScale },
      onWarning,
      ...(hybrid ? { hybrid, hybridDict } : {}),
    },
  );
  checkModuleNames(prepared, keepFloat, '--keep-float');
  const nBatches = calibrate(prepared, batchesOf(samples, batch), { onWarning });

  let fixed: GraphModule;
  try {
    fixed = convertFx(prepared, { march: marchId, onWarning });
  } catch (e) {
    if (ConversionError.isInstance(e))
      throw new CliError(
        `cannot quantize ${modelPath} for '${marchId}': ${e.message}` +
          (hybrid ? '' : '\nrerun with --hybrid to run these nodes on the CPU (a heterogeneous model)'),
        { cause: e },
      );
    throw e;
  }

  // agreement of the fixed-point model with the calibrated fake-quant model on the first batch
  const first = batchesOf(samples, batch).next().value as Tensor;
  const fq = noGrad(() => floatOf(prepared.call(first)));
  const fp = noGrad(() => floatOf(fixed.call(first)));
  const maxDiff = agreement(fq, fp, modelPath, warnings);

  const meta = {
    tool: 'qtk quantize',
    source: modelPath,
    march: marchId,
    observer,
    inputShape: [null, ...sampleShape],
    inputScale: inputScale === 'auto' ? 'auto' : inputScale,
    preprocess: { mean: pre.mean, std: pre.std, ...(pre.size ? { size: pre.size } : {}) },
    calibration: { dir: String(o.calib), samples: samples.shape[0], batches: nBatches },
    ...(keepFloat.length ? { keepFloat } : {}),
    ...(hybrid ? { hybrid: { cpuOps, cpuNodes } } : {}),
  };
  const out = String(o.out);
  saveModel(fixed, out, meta);

  const summary = summarize(prepared, fixed);
  const lines = [
    `march:        ${marchId}`,
    `observer:     ${observer} (activations), min_max per channel (weights)`,
    `nodes:        ${summary.converted} converted to fixed point (${summary.modules})`,
    ...(keepFloat.length ? [`kept float:   ${keepFloat.join(', ')}`] : []),
    ...(hybrid ? [deviceSummary(checkDeployDevice(fixed))] : []),
    `dtypes:       activations ${summary.activationDtypes.join(', ') || '-'}; weights ${summary.weightDtypes.join(', ') || '-'}`,
    `scales:       activations ${range(summary.activationScales)}; weights ${range(summary.weightScales)}`,
    `agreement:    max |fixed-point - fake-quant| = ${maxDiff.toPrecision(3)} on the first calibration batch`,
    `warnings:     ${warnings.length}${warnings.length ? `\n${warnings.map((w) => `  - ${w}`).join('\n')}` : ''}`,
    `written:      ${out} (${statSync(out).size} bytes, fixed-point)`,
    `time:         ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  ];
  io.out(`${lines.join('\n')}\n`);
  return 0;
}

/** The one value every element of `x` holds, or null when the data varies. */
function constantValue(x: Tensor): number | null {
  const v = x.values();
  const first = v[0] as number;
  for (let i = 1; i < v.length; i++) if (v[i] !== first) return null;
  return first;
}

function parseNames(value: unknown): string[] {
  if (value === undefined) return [];
  return String(value)
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/** Every name must be a module of the prepared model (generated ones such as _generated_add_0 included). */
function checkModuleNames(gm: GraphModule, names: readonly string[], option: string): void {
  const known = new Set(gm.namedModules().map(([n]) => n));
  const unknown = names.filter((n) => !known.has(n));
  if (!unknown.length) return;
  const listed = [...known]
    .filter((n) => n !== '' && !n.includes('.') && !n.includes('activation_post_process'))
    .sort();
  throw new CliError(
    `${option}: no module named ${unknown.map((n) => `'${n}'`).join(', ')} in the model; its modules are: ${listed.slice(0, 40).join(', ')}${listed.length > 40 ? ', ...' : ''}`,
    { exitCode: 2 },
  );
}

const FLOAT32_MIN_NORMAL = 2 ** -126;
const FLOAT32_MAX = 3.4028234663852886e38;

function parseInputScale(text: string): number | 'auto' {
  if (text === 'auto') return 'auto';
  const v = parseNumber(text);
  // a scale is stored as float32: it must stay a positive normal float32 number
  if (!(v >= FLOAT32_MIN_NORMAL && v <= FLOAT32_MAX)) {
    throw new CliError(
      `--input-scale must be a positive number from 1.2e-38 to 3.4e38 (a normal float32, e.g. 1/128) or 'auto', got '${text}'`,
      { exitCode: 2 },
    );
  }
  return v;
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
