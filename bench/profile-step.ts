// Per-op profile of reference-network training steps at batch 64:
// node --conditions=qtk-source --import tsx bench/profile-step.ts [steps]
import { ReferenceNet } from '@qtk/examples';
import { SGD } from '@qtk/nn';
import { crossEntropy, formatTimings, Generator, profileOps, randint, randn } from '@qtk/tensor';

const steps = Number(process.argv[2] ?? 5);
const gen = new Generator(0);
const model = new ReferenceNet({ generator: gen });
const opt = new SGD(model.parameters(), { lr: 0.05, momentum: 0.9, weightDecay: 5e-4 });
const x = randn([64, 1, 28, 28], { generator: gen });
const y = randint(0, 10, [64], { generator: gen });
const phases = { forward: 0, backward: 0, step: 0 };
const step = () => {
  let t = performance.now();
  const loss = crossEntropy(model.call(x), y);
  phases.forward += performance.now() - t;
  t = performance.now();
  opt.zeroGrad();
  loss.backward();
  phases.backward += performance.now() - t;
  t = performance.now();
  opt.step();
  phases.step += performance.now() - t;
};
for (let i = 0; i < 3; i++) step();
phases.forward = phases.backward = phases.step = 0;
const t0 = performance.now();
const { timings } = profileOps(() => {
  for (let i = 0; i < steps; i++) step();
});
const total = performance.now() - t0;
console.log(formatTimings(timings.map((t) => ({ ...t, ms: t.ms / steps, calls: t.calls / steps }))));
console.log(
  `per step: ${(total / steps).toFixed(1)} ms (forward ${(phases.forward / steps).toFixed(1)}, backward ${(phases.backward / steps).toFixed(1)}, optimizer ${(phases.step / steps).toFixed(1)})`,
);
