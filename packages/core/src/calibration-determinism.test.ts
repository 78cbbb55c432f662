// Calibration is deterministic by construction: every output element of a threaded kernel is computed
// by one thread with a fixed summation order (chunks depend on the problem, never on the thread count),
// inputs are staged before the worker starts, and observers are functions of the batches in order.
// So the scales of a calibration are the same bits on one wasm thread, on two, and on every repeat.
import { getDefaultQconfig, defaultQatOutQconfig, namedFakeQuants } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import * as nn from '@qtk/nn';
import { Generator, loadWasmBackend, randn, setWasmThreads, wasmStatus, type Tensor } from '@qtk/tensor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrate, prepareQatFx } from './index.js';

class Net extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly conv1 = new nn.Conv2d(3, 16, 3, { padding: 1, generator: new Generator(1) });
  readonly bn1 = new nn.BatchNorm2d(16);
  readonly relu = new nn.ReLU();
  readonly conv2 = new nn.Conv2d(16, 32, 3, { padding: 1, generator: new Generator(2) });
  readonly gate = new nn.Sigmoid();
  readonly pool = new nn.AdaptiveAvgPool2d(1);
  readonly flatten = new nn.Flatten();
  readonly fc = new nn.Linear(32, 10, { generator: new Generator(3) });
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    const a = this.relu.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    const b = this.gate.call(this.conv2.call(a)).mul(a.mean([1], true)); // conv2 on [32,16,14,14]: ~58 MFLOP, threaded
    return this.dequant.call(this.fc.call(this.flatten.call(this.pool.call(b))));
  }
}

const batches = Array.from({ length: 3 }, (_, i) => randn([32, 3, 14, 14], { generator: new Generator(10 + i) }));

function calibratedScales(observer: string): Map<string, number[]> {
  const qat = prepareQatFx(
    new Net().eval(),
    {
      global: getDefaultQconfig('fake_quant', 'fake_quant', observer, 'min_max'),
      moduleName: { fc: defaultQatOutQconfig },
    },
    { march: 'bayes', onWarning: () => {} },
  );
  calibrate(qat, batches);
  return new Map(namedFakeQuants(qat).map(([n, fq]) => [n, Array.from(fq.calculateQparams().scale)]));
}

beforeAll(async () => {
  loadWasmBackend();
  setWasmThreads(true);
  calibratedScales('min_max'); // a large enough conv starts the worker, which gets ready asynchronously
  for (let i = 0; i < 250 && wasmStatus().threads !== 2; i++) await new Promise((r) => setTimeout(r, 20));
});
afterAll(() => setWasmThreads(true));

describe('calibration determinism', () => {
  for (const observer of ['kl', 'mse', 'min_max']) {
    it(`${observer}: one thread, two threads and a repeat give bit-identical scales`, () => {
      setWasmThreads(false);
      const one = calibratedScales(observer);
      setWasmThreads(true);
      const before = wasmStatus().workerChunks ?? 0;
      const two = calibratedScales(observer);
      const again = calibratedScales(observer);
      expect(wasmStatus().threads).toBe(2);
      expect(wasmStatus().workerChunks ?? 0).toBeGreaterThan(before); // the worker did take part
      expect(one.size).toBeGreaterThan(4);
      expect(two).toEqual(one);
      expect(again).toEqual(one);
    });
  }
});
