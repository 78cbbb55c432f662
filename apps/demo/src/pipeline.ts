import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { calibratePostTraining, convertFx, prepareQatFx, setFakeQuantize, startQat } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, type QConfig } from '@qtk/fake-quant';
import { fuseFx } from '@qtk/fusion';
import type { GraphModule } from '@qtk/ir';
import { agreement, batchesOf, deepCopy, ProgressBar } from '@qtk/nn';
import { accuracyOf, loadDataset, predict, ReferenceNet, SUBSET_DIR, trainFloat, type Dataset } from '@qtk/examples';
import { Generator } from '@qtk/tensor';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import type { DemoObserver, DemoOptions } from './args.js';
import { loadFloatWeights, EMBEDDED_WEIGHTS } from './weights.js';

/** What the summary table and the artifacts are made of. */
export interface DemoResult {
  options: DemoOptions;
  dataDir: string;
  trainImages: number;
  testImages: number;
  weightsSource: string;
  accuracy: { float: number; calibration: number; qat: number | null; fixedPoint: number };
  /** Top-1 agreement between the fake-quant model that was converted (QAT, or calibration with --qat-steps 0) and the fixed-point model. */
  agreement: number;
  qatLoss: number | null;
  /** Wall time of each stage, its test evaluation included. */
  seconds: Record<'data' | 'float' | 'calibration' | 'qat' | 'fixedPoint', number>;
  float: ReferenceNet;
  calibrated: GraphModule;
  qat: GraphModule | null;
  fixedPoint: GraphModule;
  /** The test images the accuracies were measured on. */
  test: Dataset;
}

/** Activation qconfig of calibration: the chosen observer, min-max per-channel weights; the output Linear keeps a high-precision output. */
export function calibrationQconfig(observer: DemoObserver): QConfig {
  return getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max');
}

/**
 * QAT qconfig: LSQ activation scales (learned, started from the calibrated scales, so the chosen
 * observer's result carries into QAT and no histogram observer runs per step), min-max per-channel weights.
 */
export const QAT_QCONFIG: QConfig = getDefaultQconfig('lsq', 'fake_quant', 'min_max', 'min_max');

function timed<T>(f: () => T): [T, number] {
  const t0 = performance.now();
  const r = f();
  return [r, (performance.now() - t0) / 1000];
}

/**
 * The demo: float accuracy, fusion, calibration, QAT, conversion and evaluation. `log` gets one
 * line per step; the progress bars go to stderr.
 */
export function runDemo(options: DemoOptions, log: (line: string) => void = () => {}): DemoResult {
  const progress = options.progress;
  const dataDir = options.data ?? SUBSET_DIR;
  if (
    !existsSync(join(dataDir, 'train-images-idx3-ubyte.gz')) &&
    !existsSync(join(dataDir, 'train-images-idx3-ubyte'))
  ) {
    throw new Error(
      `--data ${dataDir}: no Fashion-MNIST IDX files there (expected train-images-idx3-ubyte.gz and the other three)`,
    );
  }
  const [[train, test], tData] = timed(() => [
    loadDataset(dataDir, 'train', options.trainLimit ?? undefined),
    loadDataset(dataDir, 'test', options.testLimit ?? undefined),
  ]);
  log(
    `data: ${options.data ?? 'embedded Fashion-MNIST subset'} (${train.labels.size} train, ${test.labels.size} test images)`,
  );

  let weightsSource: string;
  const [float, tFloat] = timed(() => {
    if (options.trainFloat) {
      const model = new ReferenceNet({ generator: new Generator(options.seed) });
      const epochs = options.floatEpochs ?? (options.data ? 8 : 2);
      weightsSource = `trained here (${epochs} epochs)`;
      log(`float: training ${epochs} epochs (the float protocol)`);
      trainFloat(model, train, { epochs, lr: 0.05, seed: options.seed, progress });
      return model.eval();
    }
    weightsSource = options.weights ?? `embedded (${EMBEDDED_WEIGHTS.replace(/.*apps\//, 'apps/')})`;
    return loadFloatWeights(options.weights ?? EMBEDDED_WEIGHTS);
  });
  const [floatPred, tFloatEval] = timed(() => predict(float, test, { progress, label: 'float eval' }));
  const floatAcc = accuracyOf(floatPred, test);
  log(`float: weights ${weightsSource!}, test accuracy ${pct(floatAcc)}`);

  // each prepared model gets its own fusion: prepareQatFx swaps QAT modules into the containers of
  // the graph it is given, so two models prepared from one fused graph would share them
  float.eval();
  const qconfigDict = (global: QConfig) => ({ global, moduleName: { fc: defaultQatOutQconfig } });
  const [calibrated, tCalib] = timed(() => {
    const batches = [...batchesOf(train.images, 64, options.calibImages)];
    const bar = new ProgressBar({ total: batches.length, label: `calibrate (${options.observer})`, enabled: progress });
    const { calibrated: gm } = calibratePostTraining(fuseFx(float, { march: options.march }), {
      march: options.march,
      qconfig: qconfigDict(calibrationQconfig(options.observer)),
      fuse: false,
      calibration: batches,
      onBatch: () => bar.tick(1),
      // calibration's warnings go where calibrate sends them by default
      onWarning: (m, stage) => (stage === 'prepare' ? log(`warning: ${m}`) : console.warn(`[qtk] ${m}`)),
    });
    bar.finish();
    return gm;
  });
  const [calibPred, tCalibEval] = timed(() => predict(calibrated, test, { progress, label: 'calibration eval' }));
  const calibAcc = accuracyOf(calibPred, test);
  log(
    `calibration: ${options.observer} observer on ${Math.min(options.calibImages, train.labels.size)} images (${tCalib.toFixed(1)} s), fake-quant test accuracy ${pct(calibAcc)}`,
  );

  let qat: GraphModule | null = null;
  let qatLoss: number | null = null;
  let tQat = 0;
  let tQatEval = 0;
  let fakePred = calibPred;
  if (options.qatSteps > 0) {
    [qat, tQat] = timed(() => {
      // a copy: QAT trains the weights of the modules prepare shares with the float model (the linear layer, which
      // has no BatchNorm to fold), and the float model is still written as reference-net-float.onnx afterwards
      const gm = prepareQatFx(fuseFx(deepCopy(float), { march: options.march }), qconfigDict(QAT_QCONFIG), {
        fuse: false,
        march: options.march,
        onWarning: (m) => log(`warning: ${m}`),
      });
      startQat(gm, calibrated.stateDict());
      // epochs enough for the steps; maxSteps stops the run, the cosine schedule spans it
      const perEpoch = Math.max(1, Math.floor(train.labels.size / 64));
      const r = trainFloat(gm, train, {
        epochs: Math.ceil(options.qatSteps / perEpoch),
        maxSteps: options.qatSteps,
        lr: options.qatLr,
        seed: options.seed,
        progress,
        label: 'QAT train',
      });
      qatLoss = r.finalLoss;
      setFakeQuantize(gm, 'VALIDATION');
      return gm;
    });
    [fakePred, tQatEval] = timed(() => predict(qat!, test, { progress, label: 'QAT eval' }));
    log(
      `QAT: ${options.qatSteps} steps (${tQat.toFixed(1)} s), final loss ${qatLoss!.toFixed(4)}, fake-quant test accuracy ${pct(accuracyOf(fakePred, test))}`,
    );
  }

  const [fixedPoint, tConvert] = timed(() =>
    convertFx(qat ?? calibrated, { march: options.march, onWarning: (m) => log(`convert warning: ${m}`) }),
  );
  const [fixedPred, tEval] = timed(() =>
    predict(fixedPoint, test, { progress, label: `${options.march} fixed-point eval` }),
  );
  const fixedAcc = accuracyOf(fixedPred, test);
  const agree = agreement(fakePred, fixedPred);
  log(
    `fixed point: ${options.march}, converted in ${tConvert.toFixed(1)} s, test accuracy ${pct(fixedAcc)}, top-1 agreement with fake-quant ${pct(agree)} of test samples (${tEval.toFixed(1)} s)`,
  );

  return {
    options,
    dataDir,
    trainImages: train.labels.size,
    testImages: test.labels.size,
    weightsSource: weightsSource!,
    accuracy: {
      float: floatAcc,
      calibration: calibAcc,
      qat: qat ? accuracyOf(fakePred, test) : null,
      fixedPoint: fixedAcc,
    },
    agreement: agree,
    qatLoss,
    seconds: {
      data: tData,
      float: tFloat + tFloatEval,
      calibration: tCalib + tCalibEval,
      qat: tQat + tQatEval,
      fixedPoint: tConvert + tEval,
    },
    float,
    calibrated,
    qat,
    fixedPoint,
    test,
  };
}

export function pct(x: number): string {
  return `${(x * 100).toFixed(2)} %`;
}
