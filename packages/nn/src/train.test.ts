import { argmax, crossEntropy, Generator, noGrad, randn, type Tensor, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { DataLoader } from './data/data-loader.js';
import { ReLU } from './layers/activation.js';
import { Flatten } from './layers/basic.js';
import { Sequential } from './layers/container.js';
import { Conv2d } from './layers/conv.js';
import { Linear } from './layers/linear.js';
import { BatchNorm2d } from './layers/normalization.js';
import { AdaptiveAvgPool2d, MaxPool2d } from './layers/pooling.js';
import { CrossEntropyLoss } from './loss.js';
import { Adam } from './optim/adam.js';
import { CosineAnnealingLR } from './optim/lr-scheduler.js';
import { SGD } from './optim/sgd.js';

function accuracy(logits: Tensor, labels: Tensor): number {
  const p = argmax(logits, 1).toArray();
  const l = labels.toArray();
  return p.filter((v, i) => v === l[i]).length / l.length;
}

describe('small networks train', () => {
  it('an MLP learns XOR quadrants with Adam (full batch)', () => {
    const gen = new Generator(0);
    const n = 256;
    const xs = new Float32Array(n * 2);
    const ys = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const a = gen.uniform() * 2 - 1;
      const b = gen.uniform() * 2 - 1;
      xs[2 * i] = a;
      xs[2 * i + 1] = b;
      ys[i] = a > 0 !== b > 0 ? 1 : 0;
    }
    const x = tensor(xs, [n, 2]);
    const y = tensor(ys, [n]);
    const model = new Sequential(
      new Linear(2, 32, { generator: gen }),
      new ReLU(),
      new Linear(32, 2, { generator: gen }),
    );
    const opt = new Adam(model.parameters(), { lr: 0.03 });
    const lossFn = new CrossEntropyLoss();
    const losses: number[] = [];
    for (let step = 0; step < 150; step++) {
      const loss = lossFn.call(model.call(x), y);
      opt.zeroGrad();
      loss.backward();
      opt.step();
      losses.push(loss.item());
    }
    expect(losses[0]).toBeGreaterThan(0.6);
    expect(losses.at(-1)!).toBeLessThan(0.15);
    expect(
      accuracy(
        noGrad(() => model.call(x)),
        y,
      ),
    ).toBeGreaterThan(0.95);
  });

  it('a conv-bn-relu net tells horizontal from vertical bars with SGD, batches and a cosine schedule', () => {
    const gen = new Generator(1);
    const n = 128;
    const s = 8;
    const imgs = randn([n, 1, s, s], { generator: gen, std: 0.3 });
    const data = imgs.data as Float32Array;
    const labels = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const vertical = i % 2;
      labels[i] = vertical;
      const at = 1 + gen.int(s - 2);
      for (let k = 0; k < s; k++) data[i * s * s + (vertical ? k * s + at : at * s + k)]! += 1.5;
    }
    const y = tensor(labels, [n]);
    const model = new Sequential(
      new Conv2d(1, 8, 3, { padding: 1, bias: false, generator: gen }),
      new BatchNorm2d(8),
      new ReLU(),
      new MaxPool2d(2),
      new Conv2d(8, 8, 3, { padding: 1, generator: gen }),
      new ReLU(),
      new AdaptiveAvgPool2d(1),
      new Flatten(),
      new Linear(8, 2, { generator: gen }),
    );
    const loader = new DataLoader([imgs, y], { batchSize: 32, shuffle: true, seed: 3, dropLast: true });
    const epochs = 12;
    const opt = new SGD(model.parameters(), { lr: 0.1, momentum: 0.9, weightDecay: 1e-4 });
    const sched = new CosineAnnealingLR(opt, { tMax: epochs * loader.length });
    const epochLoss: number[] = [];
    for (let e = 0; e < epochs; e++) {
      let sum = 0;
      for (const [xb, yb] of loader) {
        const loss = crossEntropy(model.call(xb!), yb!);
        opt.zeroGrad();
        loss.backward();
        opt.step();
        sched.step();
        sum += loss.item();
      }
      epochLoss.push(sum / loader.length);
    }
    expect(epochLoss.at(-1)!).toBeLessThan(0.3 * epochLoss[0]!);
    model.eval();
    expect(
      accuracy(
        noGrad(() => model.call(imgs)),
        y,
      ),
    ).toBeGreaterThan(0.9);
    expect(sched.getLastLr()[0]).toBeCloseTo(0, 10);
    // The trained state (including BN running stats) moves to a fresh model exactly.
    const copy = new Sequential(
      new Conv2d(1, 8, 3, { padding: 1, bias: false }),
      new BatchNorm2d(8),
      new ReLU(),
      new MaxPool2d(2),
      new Conv2d(8, 8, 3, { padding: 1 }),
      new ReLU(),
      new AdaptiveAvgPool2d(1),
      new Flatten(),
      new Linear(8, 2),
    );
    copy.loadStateDict(model.stateDict());
    copy.eval();
    expect(noGrad(() => copy.call(imgs)).toArray()).toEqual(noGrad(() => model.call(imgs)).toArray());
  });
});
