// Milliseconds per batch of 500 test images through the converted reference network, per march:
//   node --conditions=qtk-source --import tsx bench/fixed-point-batch.ts [weights] [--profile]
// (calibrated with min-max on 256 subset training images; the output Linear keeps a high-precision output).
import { calibrate, convertFx, prepareQatFx, setFakeQuantize } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import { loadDataset, ReferenceNet, SUBSET_DIR, takeBatch } from '@qtk/examples';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import { loadStateDictFileSync } from '@qtk/nn/node';
import { formatTimings, noGrad, profileOps } from '@qtk/tensor';
import { calibrationBatches } from './calibration.js';

const weights = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 'runs/float-8ep.qtk';
const profile = process.argv.includes('--profile');
const float = new ReferenceNet();
float.loadStateDict(loadStateDictFileSync(weights));
float.eval();
const gm = prepareQatFx(
  float,
  { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
  { march: 'bayes' },
) as GraphModule;
calibrate(gm, calibrationBatches(loadDataset(SUBSET_DIR, 'train', 256), 256));
setFakeQuantize(gm, 'VALIDATION');
const test = loadDataset(SUBSET_DIR, 'test', 2000);
const batches = [0, 500, 1000, 1500].map((at) => takeBatch(test, null, at, 500).images);

for (const march of ['bayes', 'bernoulli2'] as const) {
  const fixed = convertFx(gm, { march });
  noGrad(() => fixed.call(batches[0]!));
  const times: number[] = [];
  let checksum = 0;
  for (let rep = 0; rep < 2; rep++) {
    for (const b of batches) {
      const t0 = performance.now();
      const y = noGrad(() => fixed.call(b)) as { values(): ArrayLike<number> };
      times.push(performance.now() - t0);
      const v = y.values();
      for (let i = 0; i < v.length; i += 7) checksum = (checksum * 31 + Math.round(v[i]! * 1e4)) | 0;
    }
  }
  times.sort((a, b) => a - b);
  console.log(
    `${march}: ms per batch of 500: median ${times[times.length >> 1]!.toFixed(0)}, min ${times[0]!.toFixed(0)} (checksum ${checksum})`,
  );
  if (profile) {
    const { timings } = profileOps(() => noGrad(() => fixed.call(batches[1]!)));
    console.log(formatTimings(timings));
  }
}
