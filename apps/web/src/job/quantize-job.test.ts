import { modelFromBytes } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import { symbolicTrace } from '@qtk/ir';
import { Conv2d, Flatten, Hardswish, Linear, Module, ReLU } from '@qtk/nn';
import { exportOnnxBytes, importOnnx } from '@qtk/onnx';
import * as ort from 'onnxruntime-node';
import { Generator, noGrad, randn, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { predict } from './predict.js';
import { JobError, type QuantizeJob, runQuantizeJob } from './quantize-job.js';
import { JOB_STAGES } from './stages.js';

/** conv → activation → linear; with Hardswish, an operator bernoulli2 cannot run. */
class TinyNet extends Module {
  readonly conv = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly flatten = new Flatten();
  readonly fc = new Linear(4 * 6 * 6, 3, { generator: new Generator(2) });
  constructor(readonly act: Module = new ReLU()) {
    super();
  }
  forward(x: Tensor): Tensor {
    return this.fc.call(this.flatten.call(this.act.call(this.conv.call(x)) as Tensor));
  }
}

function tinyJob(net: Module = new TinyNet().eval()): QuantizeJob {
  const example = randn([1, 1, 6, 6], { generator: new Generator(3) });
  const onnx = exportOnnxBytes(symbolicTrace(net), example, { inputNames: ['x'] });
  const images = randn([40, 1, 6, 6], { generator: new Generator(4) }).clamp(-1, 1);
  // labels: the float model's own classes, so its accuracy is exactly 1
  const labels = predict(importOnnx(onnx), images, 16, () => {});
  return {
    onnx,
    modelName: 'tiny.onnx',
    calibration: images,
    test: { images, labels },
    march: 'bayes',
    observer: 'min_max',
    hybrid: false,
    inputScale: 1 / 128,
    batch: 16,
    profileSamples: 8,
  };
}

describe('runQuantizeJob', () => {
  it('measures float and fixed-point accuracy, reports every stage, and writes a model file and ONNX that load back', async () => {
    const job = tinyJob();
    const stages: string[] = [];
    const r = runQuantizeJob(job, (p) => {
      if (p.done > 0) stages.push(p.stage);
    });
    // each stage finishes once, in order (eval and calibration stages once per batch)
    expect(stages.filter((s, i) => s !== stages[i - 1])).toEqual([...JOB_STAGES]);
    expect(r.accuracy).toEqual({ float: 1, fixedPoint: r.agreement, samples: 40 });
    expect(r.agreement!).toBeGreaterThan(0.8);
    expect(r.sampleShape).toEqual([1, 6, 6]);
    expect(r.deviceCounts).toEqual({ BPU: r.devices.length, CPU: 0 });
    expect(r.similarity.map((s) => s.name)).toContain('fc');
    for (const s of r.similarity) expect(s.cosine!).toBeGreaterThan(0.95);

    // the model file holds the fixed-point model: the same predictions as the job measured
    const loaded = modelFromBytes(r.modelFile, 'tiny-bayes.qtk');
    expect(loaded.march).toBe('bayes');
    expect(loaded.meta).toMatchObject({
      tool: 'qtk web',
      source: 'tiny.onnx',
      observer: 'min_max',
      inputShape: [null, 1, 6, 6],
    });
    const fromFile = predict(loaded.model, job.calibration, 16, () => {});
    let agree = 0;
    for (let i = 0; i < 40; i++) if (fromFile[i] === job.test!.labels[i]) agree++;
    expect(agree / 40).toBe(r.accuracy!.fixedPoint);

    // the ONNX export computes the fixed-point model's integer outputs bit for bit in onnxruntime
    const x = job.calibration;
    const want = noGrad(() => loaded.model.call(x));
    expect(want).toBeInstanceOf(QTensor);
    const wantValues = (want as QTensor).ints();
    const session = await ort.InferenceSession.create(r.fixedOnnx);
    const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', x.values() as Float32Array, [...x.shape]) };
    const got = (await session.run(feeds))[session.outputNames[0]!]!.data as Float32Array;
    expect(got.length).toBe(wantValues.length);
    expect(Array.from(got)).toEqual(Array.from(wantValues));
  });

  it('without labels: no accuracy, the comparison runs on the calibration samples', () => {
    const r = runQuantizeJob({ ...tinyJob(), test: null });
    expect(r.accuracy).toBeNull();
    expect(r.agreement).toBeNull();
    expect(r.similarity.length).toBeGreaterThan(0);
  });

  it('names the file for bytes that are not ONNX, and the shapes for samples that do not fit', () => {
    const job = tinyJob();
    expect(() => runQuantizeJob({ ...job, onnx: new Uint8Array([1, 2, 3]) })).toThrow(JobError);
    expect(() => runQuantizeJob({ ...job, onnx: new Uint8Array([1, 2, 3]) })).toThrow(
      /^importOnnx: 'tiny\.onnx' is not a valid ONNX model/,
    );
    const wrong = randn([4, 1, 5, 5], { generator: new Generator(5) });
    expect(() => runQuantizeJob({ ...job, calibration: wrong, test: null })).toThrow(
      'tiny.onnx takes samples of shape [1, 6, 6], but the calibration samples are [1, 5, 5]',
    );
  });

  it('hybrid: an operator the march cannot run fails with the advice to tick hybrid, and with it runs on the CPU', () => {
    const job = { ...tinyJob(new TinyNet(new Hardswish()).eval()), march: 'bernoulli2' };
    expect(() => runQuantizeJob(job)).toThrow(JobError);
    expect(() => runQuantizeJob(job)).toThrow(/cannot convert tiny\.onnx for 'bernoulli2': [\s\S]*Tick "hybrid"/);
    const r = runQuantizeJob({ ...job, hybrid: true });
    expect(r.deviceCounts.CPU).toBeGreaterThan(0);
    const cpu = r.devices.filter((d) => d.device === 'CPU');
    expect(cpu.map((d) => d.type).join(' ')).toMatch(/Hardswish/i);
    expect(r.accuracy!.float).toBe(1);
    expect(r.agreement!).toBeGreaterThan(0.8);
  });
});
