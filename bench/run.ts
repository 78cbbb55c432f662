// `pnpm bench [--quick] [--data DIR] [--json FILE] [--float-weights FILE] [--no-pytorch] [--models]` (with --float-weights the
// 8-epoch float training is skipped and those weights are evaluated instead): runs the benchmark protocols of
// docs/benchmark.md and prints one JSON object as the last output. Keys whose feature does not
// exist yet are left out. With Fashion-MNIST and python3-torch, PyTorch's side of each protocol runs right
// after QTK's (bench/pytorch-side.py): `pytorch` holds its figures, `ratio_vs_pytorch` QTK's time over PyTorch's. Full runs
// (and --models) add the quantize benchmark of torchvision-shaped models (bench/quantize-models.ts).
import { availableParallelism } from 'node:os';
import { existsSync } from 'node:fs';
import { writeFileAtomicSync } from '@qtk/nn/node';
import type { Module } from '@qtk/nn';
import { benchCalibration, loadReferenceNet } from './calibration.js';
import { predictOnRuntime } from './runtime-eval.js';
import { benchQat } from './qat.js';
import { benchFixedPoint, MARCHES } from './fixed-point.js';
import type { GraphModule } from '@qtk/ir';
import { parseArgs } from 'node:util';
import { benchFloatTrainStep, benchFloatAccuracy } from './float-train.js';
import { benchGraphOverhead } from './graph-overhead.js';
import { runPytorchSide, ratiosVsPytorch, type PytorchFigure, type PytorchSide } from './pytorch-side.js';
import { benchQuantizeModels } from './quantize-models.js';
import { accuracyOf, evaluate, loadDataset, predict, resolveFullData, takeBatch } from '@qtk/examples';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    data: { type: 'string' },
    json: { type: 'string' },
    // float weights of the reference network for calibration (default: runs/float-8ep.qtk when present)
    'float-weights': { type: 'string' },
    // leave out PyTorch's side (bench/pytorch-side.py) and the ratios
    'no-pytorch': { type: 'boolean', default: false },
    // the quantize benchmark of the torchvision-shaped models (full runs do it; --quick only with this)
    models: { type: 'boolean', default: false },
  },
});

const quick = values.quick!;
const result: Record<string, unknown> = { cores: availableParallelism() };
const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

const dataDir = resolveFullData(values.data);
// PyTorch's figures, each timed right after QTK's own (the machine's speed drifts over minutes).
const torchSide: Partial<PytorchSide> = {};
let torchSkipped: string | null = values['no-pytorch']
  ? '--no-pytorch'
  : dataDir
    ? null
    : 'no Fashion-MNIST (--data DIR)';
function pairWithPytorch(only: PytorchFigure[]): void {
  if (torchSkipped) return;
  const r = runPytorchSide({ data: dataDir!, steps: quick ? 10 : 40, only });
  if ('reason' in r) {
    torchSkipped = r.reason;
    log(`PyTorch side left out: ${r.reason}`);
    return;
  }
  Object.assign(torchSide, r.side);
  log(`PyTorch, right after: ${only.map((k) => `${k} = ${JSON.stringify(r.side[k])}`).join(', ')}`);
}

log(`float train step, batch 64 (${quick ? 'quick' : 'full'})`);
result.float_train_step_ms = round(benchFloatTrainStep({ steps: quick ? 10 : 40 }), 2);
log(`float_train_step_ms = ${result.float_train_step_ms}`);
pairWithPytorch(['float_train_step_ms']);

log('graph overhead: reference network as a GraphModule, eval forward, batch 64');
const overhead = benchGraphOverhead({ reps: quick ? 5 : 15 });
result.graph_overhead_pct = round(overhead.pct, 3);
log(
  `graph_overhead_pct = ${result.graph_overhead_pct} (graph machinery ${(overhead.machineryMs * 1000).toFixed(1)} µs per forward; ` +
    `eager forward ${overhead.eagerMs.toFixed(2)} ms, GraphModule forward ${overhead.graphMs.toFixed(2)} ms, medians)`,
);

const accuracy: Record<string, unknown> = {};
let floatModel: Module | null = null;
const givenWeights = values['float-weights'];
if (dataDir && !quick && givenWeights) {
  // Weights already trained by the float protocol (`pnpm train-float --data DIR`): evaluate them instead of retraining.
  log(`float protocol skipped: evaluating the given float weights ${givenWeights} on ${dataDir}`);
  floatModel = loadReferenceNet(givenWeights);
  accuracy.float = round(evaluate(floatModel, loadDataset(dataDir, 'test')), 4);
} else if (dataDir && !quick) {
  log(`float protocol on ${dataDir}: 8 epochs`);
  const acc = await benchFloatAccuracy(dataDir, (m) => (floatModel = m));
  accuracy.float = round(acc, 4);
} else {
  log(
    quick
      ? 'quick run: float accuracy protocol skipped'
      : 'no Fashion-MNIST found (pass --data DIR): float accuracy skipped',
  );
}

const weightsPath = values['float-weights'] ?? (existsSync('runs/float-8ep.qtk') ? 'runs/float-8ep.qtk' : undefined);
if (weightsPath && !floatModel) {
  log(`float weights for calibration: ${weightsPath}`);
  floatModel = loadReferenceNet(weightsPath);
}
if (dataDir && floatModel) {
  // The eval protocol on the float model (PyTorch's float_eval_10k_s is the same loop): 10k test images, batch 500.
  const test10k = loadDataset(dataDir, 'test');
  predict(floatModel, takeBatch(test10k, null, 0, 500), { label: 'warm-up' });
  // the engine `qtk eval` uses for float models (onnxruntime-node), then QTK's own kernels, the reference
  const tEval = performance.now();
  const floatAcc = accuracyOf(await predictOnRuntime(floatModel, test10k), test10k);
  result.float_eval_10k_s = round((performance.now() - tEval) / 1000, 3);
  const tQtk = performance.now();
  const qtkAcc = accuracyOf(predict(floatModel, test10k, { label: 'float eval' }), test10k);
  result.float_eval_10k_qtk_s = round((performance.now() - tQtk) / 1000, 3);
  log(
    `float_eval_10k_s = ${result.float_eval_10k_s} in onnxruntime-node, ${result.float_eval_10k_qtk_s} in QTK ` +
      `(${test10k.labels.size} images, batch 500, accuracy ${(floatAcc * 100).toFixed(2)} % / ${(qtkAcc * 100).toFixed(2)} %)`,
  );
  if (floatAcc !== qtkAcc) log('WARNING: the two engines give different float accuracies');
  pairWithPytorch(['float_eval_10k_s']);
  const testLimit = quick ? 2000 : undefined;
  log(
    `calibration protocol: 1024 training images, batch 64, each observer; test accuracy on ${testLimit ?? 'all'} test images`,
  );
  const calib = await benchCalibration(floatModel, dataDir, { testLimit, log });
  const rounded = (times: Record<string, number>) =>
    Object.fromEntries(Object.entries(times).map(([k, v]) => [k, round(v, 3)]));
  result.calib_1024_s = rounded(calib.calib_1024_s);
  result.calib_1024_qtk_s = rounded(calib.calib_1024_qtk_s);
  if (calib.engineAccuracyDiffers.length)
    log(`WARNING: the two calibration engines give different accuracies for ${calib.engineAccuracyDiffers.join(', ')}`);
  accuracy.calib = Object.fromEntries(Object.entries(calib.accuracy).map(([k, v]) => [k, round(v, 4)]));
  accuracy.calib_qtk = Object.fromEntries(Object.entries(calib.accuracyQtk).map(([k, v]) => [k, round(v, 4)]));
  pairWithPytorch(['calib_1024_s']);
  log(quick ? 'QAT step time (10 steps)' : 'QAT protocol: 1 epoch from the calibrated float weights');
  const qat = benchQat(floatModel, dataDir, { maxSteps: quick ? 10 : undefined, evaluateAccuracy: !quick, log });
  result.qat_train_step_ms = round(qat.stepMs, 2);
  pairWithPytorch(['qat_train_step_ms']);
  if (qat.accuracy !== null) accuracy.qat = round(qat.accuracy, 4);
  const test = loadDataset(dataDir, 'test');
  log(
    `fixed-point: convert the min-max calibrated model for each march, eval on ${test.labels.size} test images, batch 500`,
  );
  const fromCalib = benchFixedPoint(calib.models.min_max as GraphModule, test, { label: 'calibration (min_max)', log });
  pairWithPytorch(['int_eval_10k_s']);
  let fromQat: typeof fromCalib = {};
  if (qat.accuracy !== null) {
    log('fixed-point: convert the QAT model for each march');
    fromQat = benchFixedPoint(qat.model, test, { label: 'QAT', log });
  }
  const fixedAcc: Record<string, Record<string, number>> = {};
  const evalS: Record<string, number> = {};
  const agree: Record<string, number> = {};
  for (const march of MARCHES) {
    fixedAcc[march] = { calib: round(fromCalib[march]!.accuracy, 4) };
    if (fromQat[march]) fixedAcc[march]!.qat = round(fromQat[march]!.accuracy, 4);
    // the eval protocol's figure is for 10k images; a quick run on fewer leaves it out
    const timed = fromQat[march] ?? fromCalib[march]!;
    if (test.labels.size === 10000) evalS[march] = round(timed.evalSeconds, 3);
    agree[march] = round(timed.agreement, 4);
  }
  accuracy.fixed_point = fixedAcc;
  if (Object.keys(evalS).length) result.int_eval_10k_s = evalS;
  result.agreement_fake_vs_fixed = agree;
} else {
  log(
    'calibration and QAT protocols skipped (needs Fashion-MNIST and float weights: --float-weights FILE, or a full run that trains them)',
  );
}
if (Object.keys(accuracy).length) result.accuracy = accuracy;

if (!quick || values.models) {
  log('quantize benchmark: torchvision-shaped models, random weights, 32 calibration samples, bayes');
  const q = await benchQuantizeModels('runs/bench-models', log);
  if ('reason' in q) log(`quantize benchmark skipped: ${q.reason}`);
  else {
    result.quantize_s = q.quantize_s;
    result.quantize_peak_mb = q.quantize_peak_mb;
    result.quantize_work_s = q.quantize_work_s;
    result.quantize_engine = q.quantize_engine;
    result.ort_calibration_s = Object.fromEntries(
      Object.entries(q.ort_calibration_s).map(([m, s]) => [m, round(s, 3)]),
    );
    if (q.pytorch_quantize_s) {
      result.pytorch_quantize_s = q.pytorch_quantize_s;
      if (Object.keys(q.pytorch_cannot).length) result.pytorch_cannot = q.pytorch_cannot;
      const over = (times: Record<string, number>) =>
        Object.fromEntries(
          Object.entries(times).flatMap(([m, s]) =>
            q.pytorch_quantize_s![m] === undefined ? [] : [[m, round(s / q.pytorch_quantize_s![m]!, 2)]],
          ),
        );
      result.ratio_quantize_vs_pytorch = over(q.quantize_s);
      // both in-process: QTK without Node's start-up and module loading, PyTorch without Python's and torch's import
      result.ratio_quantize_work_vs_pytorch = over(q.quantize_work_s);
    }
  }
}

if (Object.keys(torchSide).length) {
  result.pytorch = torchSide;
  result.ratio_vs_pytorch = ratiosVsPytorch(result, torchSide);
  log(`QTK / PyTorch: ${JSON.stringify(result.ratio_vs_pytorch)}`);
} else log(`PyTorch side skipped: ${torchSkipped ?? 'no protocol ran'}`);

function round(v: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

const json = JSON.stringify(result, null, 2);
if (values.json) {
  writeFileAtomicSync(values.json, json);
}
console.log(json);
