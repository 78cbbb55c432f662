// convertFx of a hybrid model: BPU segments compute the march's integers, CPU ops float, and the
// whole agrees with its fake-quant model; each BPU segment is bit-exact with the plain (non-hybrid)
// conversion of that segment alone; the model file round trip changes nothing.
import { calibrate, convertFx, prepareQatFx, type QatModule } from '@qtk/core';
import { loadModelFileSync, saveModelFileSync } from '@qtk/core/node';
import { defaultQatQconfig, type FakeQuantize, setFakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bernoulli2';
import { type Conv2d, DeQuantStub, Module, QuantStub } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDeployDevice } from './index.js';
import { AlternatingNet, call, MiddleOpsNet, prototypeTask, randomInputs } from '@qtk/test-models';
import { calibrated } from './testing/calibrated.js';
import { prepareHybrid } from './testing/prepare-hybrid.js';

const quiet = { onWarning: () => {} };
const argmaxRows = (t: Tensor): number[] => {
  const [n, c] = t.shape as [number, number];
  const v = t.values();
  return Array.from({ length: n }, (_, i) => {
    let best = 0;
    for (let j = 1; j < c; j++) if (v[i * c + j]! > v[i * c + best]!) best = j;
    return best;
  });
};

describe('heterogeneous fixed-point model', () => {
  it('bernoulli2, hardswish / hardsigmoid / SELU on the CPU: top-1 agrees with the fake-quant model on >= 99.5 % of 400 inputs', () => {
    // pooling kernel 1 hands every position to the linear layer, set up to tell ten prototypes apart
    const net = new MiddleOpsNet(3, 1);
    const task = prototypeTask(net);
    const calib = [1, 2, 3, 4].map((s) => task(s, 10).x);
    const qat = calibrated(prepareHybrid(net, 'bernoulli2'), calib);
    const fixed = convertFx(qat, quiet);
    expect(checkDeployDevice(fixed).segments).toHaveLength(7);
    let agree = 0;
    let correct = 0;
    let total = 0;
    for (let b = 0; b < 8; b++) {
      const { x, labels } = task(100 + b, 50);
      const want = argmaxRows(call(qat, x));
      const got = argmaxRows(call(fixed, x));
      agree += want.filter((w, i) => w === got[i]).length;
      correct += want.filter((w, i) => w === labels[i]).length;
      total += want.length;
    }
    expect(total).toBe(400);
    // heavy noise: the fake-quant model is right on 307 of 400, so many inputs sit near a class boundary
    expect(correct / total).toBeGreaterThanOrEqual(0.7);
    expect(agree / total).toBeGreaterThanOrEqual(0.995); // 399 of 400
  });

  it('each BPU segment is bit-exact with the non-hybrid conversion of that segment alone, at the same calibrated scales', () => {
    const net = new AlternatingNet();
    const qat = prepareHybrid(net, 'bernoulli2');
    const convs = ['conv0', 'conv1', 'conv2', 'conv3'] as const;
    const acts = ['act0', 'act1', 'act2'] as const;
    // what enters each BPU segment during calibration: the model input, then each CPU op's float output
    const batches = [1, 2, 3].map((s) => randomInputs(s, 8));
    const segmentInputs: Tensor[][] = convs.map(() => []);
    const hooks = acts.map((a, k) =>
      qat.getSubmodule(a).registerForwardHook((_m, _args, out) => {
        segmentInputs[k + 1]!.push(out as Tensor);
      }),
    );
    segmentInputs[0]!.push(...batches);
    calibrate(qat, batches);
    for (const h of hooks) h.remove();
    setFakeQuantize(qat, 'VALIDATION');
    const fixed = convertFx(qat, quiet);

    // what the heterogeneous model feeds each segment, and what each segment gives back (dequantized)
    const x = randomInputs(50, 16);
    const fedTo: Tensor[] = [x];
    const outputs: Tensor[] = [];
    const handles = acts.map((a) =>
      fixed.getSubmodule(a).registerForwardHook((_m, args, out) => {
        outputs.push(args[0] as Tensor); // the dequantized output of the segment before the CPU op
        fedTo.push(out as Tensor);
      }),
    );
    outputs.push(call(fixed, x));
    for (const h of handles) h.remove();
    expect([fedTo.length, outputs.length]).toEqual([4, 4]);

    const boundaryScales = qat.graph.nodes
      .filter((n) => n.meta.floatBoundary === true)
      .map((n) => (qat.getSubmodule(n.target) as FakeQuantize).calculateQparams().scale[0]);
    expect(boundaryScales).toHaveLength(3);

    for (const [k, name] of convs.entries()) {
      const conv = net.getSubmodule(name) as Conv2d;
      const segment = calibrated(
        prepareQatFx(new Segment(conv), { global: defaultQatQconfig }, { march: 'bernoulli2', ...quiet }),
        segmentInputs[k]!,
      );
      const stubScale = (segment.getSubmodule('quant') as QatModule).activationPostProcess!.calculateQparams().scale[0];
      const outScale = (segment.getSubmodule('conv') as QatModule).activationPostProcess!.calculateQparams().scale[0];
      expect(outScale).toBe((qat.getSubmodule(name) as QatModule).activationPostProcess!.calculateQparams().scale[0]);
      if (k > 0) expect(stubScale).toBe(boundaryScales[k - 1]);
      const plain = convertFx(segment, quiet);
      expect(checkDeployDevice(plain).segments).toEqual([{ device: 'BPU', nodes: ['conv'] }]);
      expect(call(plain, fedTo[k]!).values()).toEqual(outputs[k]!.values());
    }
  });

  it('saveModelFile / loadModelFile: the loaded heterogeneous model gives bit-identical outputs and the same device report', () => {
    const qat = calibrated(prepareHybrid(new MiddleOpsNet(), 'bernoulli2'));
    const fixed = convertFx(qat, quiet);
    const dir = mkdtempSync(join(tmpdir(), 'qtk-hybrid-'));
    try {
      saveModelFileSync(fixed, join(dir, 'fixed.qtk'));
      const loaded = loadModelFileSync(join(dir, 'fixed.qtk'));
      expect(loaded.kind).toBe('fixed-point');
      const model = loaded.model as GraphModule;
      const x = randomInputs(60, 16);
      expect(call(model, x).values()).toEqual(call(fixed, x).values());
      // the whole report, fused layers' names included, comes back from the file
      expect(checkDeployDevice(model)).toEqual(checkDeployDevice(fixed));
      expect(checkDeployDevice(model).nodes.some((n) => n.fusedFrom.length > 1)).toBe(true);
      // and the QAT model: saved, loaded and converted, it converts to the same numbers
      saveModelFileSync(qat, join(dir, 'qat.qtk'));
      const qatLoaded = loadModelFileSync(join(dir, 'qat.qtk')).model as GraphModule;
      expect(call(convertFx(qatLoaded, quiet), x).values()).toEqual(call(fixed, x).values());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** One BPU segment of AlternatingNet as a model of its own: quant → conv → dequant. */
class Segment extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  constructor(readonly conv: Conv2d) {
    super();
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.conv.call(this.quant.call(x)));
  }
}
