// autoQconfig on the MobileNet-style MobileHybridNet (Fashion-MNIST, bayes): the float accuracy, the
// all-int8 PTQ accuracy, and the accuracy once autoQconfig has raised at most 10 % of the quantizable
// nodes to int16 (with --march bernoulli2: sent them to the CPU of a hybrid model). The model quantizes almost losslessly with the default PTQ, so one layer gets a
// deliberately broken qconfig (a fixed activation scale much smaller than calibration would pick:
// its outputs saturate), the failure the sensitivity table has to find and int16 has to repair.
import { mkdirSync, writeFileSync } from 'node:fs';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { calibrate, convertFx, type HybridDict, prepareQatFx, QatModule, type QConfigDict } from '@qtk/core';
import { defaultQatOutQconfig, getDefaultQconfig, qconfig, withArgs } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { checkDeployDevice, hybridPartitioner } from '@qtk/hybrid';
import type { Module } from '@qtk/nn';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { autoQconfig, type SensitivityMode, sensitivity } from '@qtk/profiler';
import type { Tensor } from '@qtk/tensor';
import { takeBatch } from './batches.js';
import { loadDataset, resolveFullData, SUBSET_DIR } from './data.js';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { firstBatches, postTrainingQuantize } from './ptq.js';
import { accuracyOf, type Dataset, predict } from './train.js';
import { scriptArgs } from './script-args.js';

const HELP = `Usage: pnpm auto-qconfig [--data DIR] [--weights FILE] [--calib N] [--select N] [--observer NAME]
  [--broken NAME] [--broken-factor X] [--share X] [--metric M] [--json FILE]

Float, all-int8 PTQ and autoQconfig (int16 for at most --share of the nodes) accuracies of
MobileHybridNet on bayes, on the Fashion-MNIST test set.
  --march M          bayes (default: int16 nodes) or bernoulli2 (hybrid: nodes sent to the CPU)
  --transitions N    with bernoulli2, most CPU↔BPU transitions autoQconfig may add (default 2)
  --data DIR         Fashion-MNIST IDX folder (default: Debian's full set when installed, else the subset;
                     'debian' for /usr/share/datasets/fashion-mnist)
  --weights FILE     float weights of MobileHybridNet (default out/mobile-hybrid-net-float-full.qtk, or
                     -subset.qtk on the subset); \`pnpm mobile-hybrid [--data debian]\` trains and saves them
  --calib N          calibration images, the first training images (default 256)
  --select N         training images after the calibration ones on which autoQconfig measures (default 1000)
  --observer NAME    activation observer of the int8 baseline (default min_max)
  --broken NAME      node given a too-small fixed activation scale (default block2.project.1; 'none' for none)
  --broken-factor X  that scale is the calibrated one divided by X (default 4)
  --share X          most raised nodes as a share of the quantizable nodes (default 0.1)
  --metric M         what autoQconfig maximises on the selection images: cosine to the float output
                     (default) or accuracy
  --modes LIST       what the sensitivity table measures per node, comma-separated: quantizedAlone, int16,
                     float (default: what autoQconfig needs, int16 on bayes, float on bernoulli2; each
                     mode adds one model per node)
  --no-reuse         calibrate every variant from scratch instead of from the baseline's statistics
  --json FILE        where to write the figures (default out/auto-qconfig.json)
`;

const values = scriptArgs(HELP, {
  weights: { type: 'string' },
  calib: { type: 'string', default: '256' },
  select: { type: 'string', default: '1000' },
  observer: { type: 'string', default: 'min_max' },
  broken: { type: 'string', default: 'block2.project.1' },
  'broken-factor': { type: 'string', default: '4' },
  share: { type: 'string', default: '0.1' },
  metric: { type: 'string', default: 'cosine' },
  modes: { type: 'string' },
  march: { type: 'string', default: 'bayes' },
  transitions: { type: 'string', default: '2' },
  'no-reuse': { type: 'boolean' },
  json: { type: 'string', default: 'out/auto-qconfig.json' },
});

const full = resolveFullData(values.data === 'debian' ? undefined : values.data);
const dir = full ?? SUBSET_DIR;
const weights = values.weights ?? `out/mobile-hybrid-net-float-${full ? 'full' : 'subset'}.qtk`;
if (!existsSync(weights)) {
  console.error(
    `error: no float weights at ${weights}; train them first with \`pnpm mobile-hybrid${full ? ' --data debian' : ''}\` (it saves them there) or pass --weights FILE`,
  );
  process.exit(2);
}
const march = values.march;
if (march !== 'bayes' && march !== 'bernoulli2') {
  console.error(`error: --march ${march}: use bayes or bernoulli2`);
  process.exit(2);
}
const hybrid = march === 'bernoulli2';
const prepare = hybrid ? { hybrid: true, partitioner: hybridPartitioner } : {};
const raised = hybrid ? 'CPU' : 'int16';
const calibCount = Number(values.calib);
const selectCount = Number(values.select);
const metric = values.metric as 'accuracy' | 'cosine';
const pct = (a: number) => `${(a * 100).toFixed(2)} %`;
const seconds = (t0: number) => (performance.now() - t0) / 1000;

const train = loadDataset(dir, 'train', calibCount + selectCount);
const test = loadDataset(dir, 'test');
console.log(
  `data: ${dir} (calibration ${calibCount}, selection ${selectCount} training images; ${test.labels.size} test images)`,
);

const float = new MobileHybridNet();
float.loadStateDict(loadStateDictFileSync(weights));
float.eval();
const accuracy = (model: Module, label: string) => accuracyOf(predict(model, test, { label }), test);
const floatAcc = accuracy(float, 'float eval');
console.log(`float: test accuracy ${pct(floatAcc)} (weights ${weights})`);

const calib = firstBatches(train, calibCount);
const defaultPtq = postTrainingQuantize(float, { march, calibration: calib, prepare });
const defaultAcc = accuracy(defaultPtq.fixedPoint, 'default PTQ eval');
console.log(`default PTQ (mse observer, int8, fc high precision${hybrid ? ', hybrid' : ''}): ${pct(defaultAcc)}`);

/** The selection set: training images after the calibration ones, in batches of 500, with labels. */
function selectionSet(data: Dataset, start: number, count: number): { inputs: Tensor[]; labels: Int32Array[] } {
  const inputs: Tensor[] = [];
  const labels: Int32Array[] = [];
  for (let i = start; i < start + count; i += 500) {
    const b = takeBatch(data, null, i, Math.min(500, start + count - i));
    inputs.push(b.images);
    labels.push(b.labels.values() as Int32Array);
  }
  return { inputs, labels };
}

const act = getDefaultQconfig('fake_quant', 'fake_quant', values.observer, 'min_max');
const baseline: QConfigDict = { global: act, moduleName: { fc: defaultQatOutQconfig } };
let broken: { name: string; calibratedScale: number; fixedScale: number } | null = null;
if (values.broken !== 'none') {
  const probe = prepareQatFx(float, baseline, { ...prepare, march, onWarning: () => {} });
  calibrate(probe, calib);
  const module = probe.getSubmodule(values.broken);
  if (!(module instanceof QatModule) || !module.activationPostProcess) {
    console.error(`error: --broken ${values.broken} is not a module with an activation fake-quant`);
    process.exit(2);
  }
  const calibratedScale = module.activationPostProcess.scale.values()[0]!;
  const fixedScale = calibratedScale / Number(values['broken-factor']);
  broken = { name: values.broken, calibratedScale, fixedScale };
  baseline.moduleName = {
    ...baseline.moduleName,
    [values.broken]: qconfig(withArgs({ observer: 'fixed_scale', scale: fixedScale, dtype: 'qint8' }), act.weight),
  };
  console.log(
    `broken layer: ${values.broken} with a fixed activation scale ${fixedScale.toExponential(3)} (calibration picks ${calibratedScale.toExponential(3)})`,
  );
}

const fixedPointOf = (dict: QConfigDict, hybridDict?: HybridDict | null) => {
  const prepared = prepareQatFx(float, dict, {
    ...prepare,
    ...(hybridDict ? { hybridDict } : {}),
    march,
    onWarning: () => {},
  });
  calibrate(prepared, calib);
  return convertFx(prepared, { march, onWarning: () => {} });
};
const int8Acc = accuracy(fixedPointOf(baseline), 'all-int8 eval');
console.log(`all-int8 PTQ (${values.observer} observer${broken ? ', broken layer' : ''}): ${pct(int8Acc)}`);

const select = selectionSet(train, calibCount, selectCount);
const t0 = performance.now();
const modes = (values.modes ?? (hybrid ? 'float' : 'int16')).split(',') as SensitivityMode[];
const reuseCalibration = !values['no-reuse'];
// The sensitivity table and the search must see the same model, data, metric and preparation.
const searchOptions = {
  march,
  calib,
  eval: select,
  metric,
  qconfigDict: baseline,
  stage: 'fixed',
  prepare,
  reuseCalibration,
} as const;
const table = sensitivity(float, { ...searchOptions, modes });
const nodeCount = table.nodes.length;
const budget = Math.floor(Number(values.share) * nodeCount);
const auto = autoQconfig(float, {
  ...searchOptions,
  budget: hybrid ? { nodes: budget, transitions: Number(values.transitions) } : budget,
  sensitivity: table,
});
const autoSeconds = seconds(t0);
console.log(
  `sensitivity: ${nodeCount} nodes, ${table.cost.variants} variants in ${table.cost.seconds.toFixed(1)} s; most sensitive (points of ${metric} on the selection set):`,
);
const points = (v: number | null) => (v === null ? '—' : (v * 100).toFixed(3)).padStart(7);
for (const n of table.nodes.slice(0, 6))
  console.log(
    `  ${n.name.padEnd(20)} ${n.type.padEnd(18)} sensitivity ${points(n.sensitivity)}  int16 gain ${points(n.int16Gain)}  float gain ${points(n.floatGain)}`,
  );
console.log(
  `  (${table.cost.buildSeconds.toFixed(1)} s preparing, calibrating and converting, ${table.cost.scoreSeconds.toFixed(1)} s evaluating)`,
);
console.log(
  `autoQconfig: ${raised} for ${auto.chosen.map((c) => c.name).join(', ') || 'nothing'} (budget ${budget} of ${nodeCount} nodes)`,
);
for (const r of auto.rejected) console.log(`  left out ${r.name}: ${r.reason}`);

const autoFixed = fixedPointOf(auto.qconfigDict, auto.hybridDict);
const autoAcc = accuracy(autoFixed, 'autoQconfig eval');
const transitions = hybrid
  ? { int8: auto.transitions.int8, autoQconfig: checkDeployDevice(autoFixed).transitions }
  : null;
if (transitions)
  console.log(`CPU↔BPU transitions: ${transitions.int8} all-int8, ${transitions.autoQconfig} with autoQconfig`);
const lost = floatAcc - int8Acc;
const recovered = autoAcc - int8Acc;
console.log(`autoQconfig: test accuracy ${pct(autoAcc)}`);
console.log(
  `float ${pct(floatAcc)} → all-int8 ${pct(int8Acc)} (−${(lost * 100).toFixed(2)} points) → autoQconfig ${pct(autoAcc)}: ` +
    `${lost > 0 ? ((recovered / lost) * 100).toFixed(0) : '—'} % of the loss recovered with ${auto.chosen.length} ${raised} node(s) ` +
    `(${((auto.chosen.length / nodeCount) * 100).toFixed(1)} % of ${nodeCount}), ${autoSeconds.toFixed(1)} s`,
);

const summary = {
  version: 1,
  model: 'MobileHybridNet',
  march,
  data: dir,
  weights,
  calibration: { images: calib.reduce((s, b) => s + b.shape[0]!, 0), observer: values.observer },
  selection: { images: selectCount, metric },
  broken,
  accuracy: { float: floatAcc, defaultPtq: defaultAcc, int8: int8Acc, autoQconfig: autoAcc },
  recoveredShare: lost > 0 ? recovered / lost : null,
  quantizableNodes: nodeCount,
  budget,
  raised: { to: raised, nodes: auto.chosen.map((c) => c.name) },
  hybridDict: auto.hybridDict,
  transitions,
  chosen: auto.chosen,
  rejected: auto.rejected,
  selectionScores: auto.scores,
  seconds: { autoQconfig: autoSeconds, sensitivity: table.cost.seconds },
  variants: auto.cost.variants,
  sensitivity: table,
};
mkdirSync(dirname(values.json), { recursive: true });
writeFileSync(values.json, `${JSON.stringify(summary, null, 2)}\n`);
console.log(`wrote ${values.json}`);
if (lost > 0 && recovered < lost / 2) process.exitCode = 1;
