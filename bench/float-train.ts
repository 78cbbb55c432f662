import { ReferenceNet, loadDataset, trainFloat, evaluate } from '@qtk/examples';
import { crossEntropy, Generator, randint, randn } from '@qtk/tensor';
import { SGD } from '@qtk/nn';

/** Mean milliseconds of one SGD step (forward, loss, backward, update) of the reference network at batch 64. */
export function benchFloatTrainStep({ steps }: { steps: number }): number {
  const gen = new Generator(0);
  const model = new ReferenceNet({ generator: gen });
  model.train();
  const opt = new SGD(model.parameters(), { lr: 0.05, momentum: 0.9, weightDecay: 5e-4 });
  const x = randn([64, 1, 28, 28], { generator: gen });
  const y = randint(0, 10, [64], { generator: gen });
  const step = () => {
    const loss = crossEntropy(model.call(x), y);
    opt.zeroGrad();
    loss.backward();
    opt.step();
  };
  for (let i = 0; i < 3; i++) step();
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  return (performance.now() - t0) / steps;
}

/** The float protocol: 8 epochs on the full training set, then test accuracy. */
export async function benchFloatAccuracy(dir: string, onTrained?: (model: ReferenceNet) => void): Promise<number> {
  const train = loadDataset(dir, 'train');
  const test = loadDataset(dir, 'test');
  const model = new ReferenceNet({ generator: new Generator(0) });
  trainFloat(model, train, { epochs: 8, lr: 0.05, seed: 0, progress: true });
  onTrained?.(model);
  return evaluate(model, test, { progress: true });
}
