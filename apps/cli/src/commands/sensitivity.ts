import { hybridPartitioner } from '@qtk/hybrid';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { autoQconfig, defaultBaselineDict, SCORE_METRICS, type ScoreMetric, sensitivity } from '@qtk/profiler';
import type { Tensor } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { inputBatches } from '../batches.js';
import { CALIBRATE_OPTIONS, parseInputScale } from '../calibrated-model.js';
import { loadEvalData } from '../data/eval-data.js';
import { loadInputSamples, SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { CliError, type CliIo } from '../io.js';
import { requireMarch } from '../registry-names.js';
import { inputShapeOption, loadOnnx, MAX_ELEMENTS_OPTION } from '../model-input.js';
import { modelInputs } from '../sample-inputs.js';
import { checkOutPath } from '../out-path.js';
import { PREPROCESS_OPTIONS, preprocessFrom } from '../preprocess-options.js';
import { splitNames } from '../hybrid-options.js';
import { ModelNames } from '../model-names.js';
import { formatTable } from '../table.js';
import { highPrecisionOutputs } from '../qconfig-options.js';

export const sensitivitySpec: CommandSpec = {
  name: 'sensitivity',
  summary:
    'Measures each node’s sensitivity to quantization (alone, at int16, in float) and, with --budget, chooses the nodes to raise.',
  positionals: [{ name: 'MODEL', description: 'the float ONNX model (.onnx; float32 inputs, one or several)' }],
  options: {
    calib: { ...CALIBRATE_OPTIONS.calib!, required: 'the calibration samples' },
    march: CALIBRATE_OPTIONS.march!,
    data: {
      type: 'string',
      value: 'DIR',
      description: 'labelled evaluation data (IDX, or files with a labels file): sensitivity as accuracy lost',
    },
    labels: { type: 'string', value: 'FILE', description: 'labels of the files in --data (default DIR/labels.txt)' },
    'eval-limit': {
      type: 'number',
      value: 'N',
      description: 'evaluate on at most N --data samples',
      default: 500,
      integer: true,
      min: 1,
    },
    metric: {
      type: 'string',
      choices: SCORE_METRICS,
      value: 'NAME',
      description: `how to score the output: ${SCORE_METRICS.join(', ')} (default accuracy with --data, else cosine)`,
    },
    budget: {
      type: 'number',
      value: 'N',
      description: 'also choose at most N nodes to raise (int16 on a march with int16, else the CPU with --hybrid)',
      integer: true,
      min: 1,
    },
    hybrid: { type: 'boolean', description: 'heterogeneous model: raised nodes go to the CPU (bernoulli2)' },
    nodes: {
      type: 'string',
      value: 'NAME[,NAME...]',
      description:
        'measure only these nodes: QTK names, ONNX node names or PyTorch module paths (a path covers what is under it)',
    },
    out: { type: 'string', value: 'FILE.json', description: 'write the table (and the choice) as JSON' },
    'input-shape': CALIBRATE_OPTIONS['input-shape']!,
    'input-scale': {
      type: 'string',
      value: 'S',
      description: "the input quantization scale ('1/128' suits inputs in [-1, 1])",
      default: '1/128',
    },
    batch: { type: 'number', value: 'N', description: 'batch size', default: 64, integer: true, min: 1 },
    'calib-limit': CALIBRATE_OPTIONS['calib-limit']!,
    limit: CALIBRATE_OPTIONS.limit!,
    ...PREPROCESS_OPTIONS,
    ...MAX_ELEMENTS_OPTION,
  },
  details: `Each variant is prepared, calibrated (reusing the all-int8 model's statistics) and scored on --data (or the
calibration samples, scored by output similarity to the float model). The JSON is the sensitivity table
prepareQatFx's sensitivitySetter reads ({ version: 1, nodes: [{ name, sensitivity, ... }] }, most sensitive first);
with --budget it also holds autoQconfig's choice (the nodes, the qconfig dict's int16 entries or the hybridDict).
${SEVERAL_INPUTS_DETAILS}`,
};

/** The batches the profiler takes: tensors for a one-input model, a tensor per input for a model of several. */
function batchList(inputs: readonly Tensor[], batch: number): (Tensor | Tensor[])[] {
  return [...inputBatches(inputs, batch)].map((b) => (b.length === 1 ? b[0]! : b));
}

export function runSensitivity(argv: readonly string[], io: CliIo): number {
  const t0 = performance.now();
  const args = parseArgs(sensitivitySpec, argv);
  const o = args.options;
  const modelPath = args.positionals[0]!;
  const march = String(o.march);
  requireMarch(march);
  const metric = o.metric === undefined ? undefined : (String(o.metric) as ScoreMetric);
  const inputScale = parseInputScale(String(o['input-scale']));
  if (inputScale === 'auto')
    throw new CliError("--input-scale 'auto' is not available here; give a scale", { exitCode: 2 });
  if (o.out !== undefined) checkOutPath(String(o.out), [{ path: modelPath, what: 'input model' }]);
  const batch = Number(o.batch);
  const shapeOption = inputShapeOption(o);
  const float = loadOnnx(modelPath, { maxElements: o['max-elements'], inputShape: shapeOption });
  const inputs = modelInputs(float, shapeOption);
  const pre = preprocessFrom(o);
  const limit = o['calib-limit'] !== undefined ? Number(o['calib-limit']) : Infinity;
  const samples = loadInputSamples(String(o.calib), inputs, { what: 'calibration', preprocess: pre, limit }).tensors;
  const calib = batchList(samples, batch);
  let evalSet: { inputs: (Tensor | Tensor[])[]; labels?: Int32Array[] } | undefined;
  if (o.data !== undefined) {
    const dir = String(o.data);
    const data = loadEvalData(dir, {
      split: 'test',
      ...(o.labels !== undefined ? { labels: String(o.labels) } : {}),
      inputs,
      preprocess: pre,
      limit: Number(o['eval-limit']),
    });
    const batches = [...inputBatches(data.inputs, batch)];
    let at = 0;
    const labels = batches.map((b) => {
      const l = data.labels.subarray(at, at + b[0]!.shape[0]!);
      at += b[0]!.shape[0]!;
      return l;
    });
    evalSet = { inputs: batchList(data.inputs, batch), labels };
  }
  const hybrid = o.hybrid === true;
  // the baseline qtk quantize prepares: int8, outputs in high precision
  const global = defaultBaselineDict().global!;
  const setup = {
    march,
    calib,
    qconfigDict: { global, moduleName: highPrecisionOutputs(float, { march, global, hybrid }) },
    // measured on the form qtk quantize builds: integer outputs, no DeQuantStubs added
    prepare: {
      inputQuantStubs: { scale: inputScale },
      outputDeQuantStubs: false,
      onWarning: () => {},
      ...(hybrid ? { hybrid, partitioner: hybridPartitioner } : {}),
    },
    ...(evalSet ? { eval: evalSet } : {}),
    ...(metric ? { metric } : {}),
  };
  io.err(`measuring ${march} sensitivity of ${modelPath} ...\n`);
  const names = ModelNames.afterFusion(float, march);
  // the profiler measures nodes of the prepared model: a fused conv + relu by its relu's name
  const nodes = o.nodes !== undefined ? names.resolveAll(splitNames(o.nodes), { preparedOnly: true }) : undefined;
  const table = sensitivity(float, { ...setup, ...(nodes ? { nodes } : {}) });
  const fmt = (v: number | null) => (v === null ? '-' : v.toPrecision(4));
  io.out(
    `${table.metric}: float ${fmt(table.scores.float)}, all int8 ${fmt(table.scores.int8)} (${table.cost.variants} variants, ${table.cost.seconds.toFixed(1)} s)\n\n`,
  );
  io.out(
    `${formatTable(
      ...names.withColumn(
        ['node', 'type', 'sensitivity', 'quantized alone', 'int16 gain', 'float gain'],
        table.nodes
          .slice(0, 20)
          .map((n) => [n.name, n.type, fmt(n.sensitivity), fmt(n.quantizedAlone), fmt(n.int16Gain), fmt(n.floatGain)]),
      ),
    )}\n`,
  );
  if (table.nodes.length > 20) io.out(`... ${table.nodes.length - 20} more in the JSON\n`);
  let choice: ReturnType<typeof autoQconfig> | null = null;
  if (o.budget !== undefined) {
    choice = autoQconfig(float, {
      ...setup,
      budget: Number(o.budget),
      sensitivity: table,
      ...(hybrid ? { mode: 'cpu' } : {}),
    });
    io.out(
      `\nautoQconfig (${choice.mode}, budget ${o.budget}): ${choice.chosen.map((c) => c.name).join(', ') || 'nothing raised'}; ` +
        `${table.metric} all int8 ${fmt(choice.scores.int8)} → ${fmt(choice.scores.measured)} (float ${fmt(choice.scores.float)})\n`,
    );
  }
  if (o.out !== undefined) {
    const out = String(o.out);
    const json = {
      ...table,
      ...(choice
        ? {
            autoQconfig: {
              mode: choice.mode,
              chosen: choice.chosen,
              rejected: choice.rejected,
              scores: choice.scores,
              int16: choice.mode === 'int16' ? choice.chosen.map((c) => c.name) : [],
              hybridDict: choice.hybridDict,
            },
          }
        : {}),
    };
    writeFileAtomicSync(out, `${JSON.stringify(json, null, 2)}\n`);
    io.out(`written: ${out}\n`);
  }
  io.out(`time: ${((performance.now() - t0) / 1000).toFixed(2)} s\n`);
  return 0;
}
