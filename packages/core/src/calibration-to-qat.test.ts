// The documented calibration -> QAT hand-off: calibrate one prepared model, save its state dict to
// a file, prepare a second model with a QAT qconfig, load, train. The QAT observers must resume from
// the calibrated statistics (or, when those are of another observer kind or absent, from the
// calibrated scale) instead of restarting on the first QAT batch.
import '@qtk/march-bayes';
import { FakeQuantize, qconfig, withArgs, type QConfig } from '@qtk/fake-quant';
import { CrossEntropyLoss, type Module, serializeStateDict, SGD, type StateDict } from '@qtk/nn';
import { loadStateDictFile, saveStateDict } from '@qtk/nn/node';
import { scaleFromRange } from '@qtk/spec';
import { Generator, randn, tensor, type Tensor } from '@qtk/tensor';
import { ConvSkipNet } from '@qtk/test-models';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calibrate, prepareQatFx, resetMarch, setMarch, startQat } from './index.js';

/** conv-bn-relu, conv + skip add, pool, linear on 1-channel images, drawn from `new Generator(seed)`. */
const smallNet = (seed: number) => new ConvSkipNet({ generator: new Generator(seed), inChannels: 1 });

const fakeQuant = (observer: string, options: Record<string, unknown>, state: 'CALIBRATION' | 'QAT') =>
  withArgs({ observer, observerOptions: options, state });

/** Activations per tensor with `observer`, weights per channel with min_max. */
function calibQconfig(observer = 'min_max', options: Record<string, unknown> = { averagingConstant: 0.5 }): QConfig {
  return qconfig(fakeQuant(observer, options, 'CALIBRATION'), withArgs({ chAxis: 0, state: 'CALIBRATION' }));
}

function qatQconfig(averagingConstant: number): QConfig {
  return qconfig(
    fakeQuant('min_max', { averagingConstant }, 'QAT'),
    withArgs({ chAxis: 0, observerOptions: { averagingConstant } }),
  );
}

const calibBatches = (n: number): Tensor[] => {
  const g = new Generator(21);
  return Array.from({ length: n }, () => randn([8, 1, 6, 6], { generator: g }));
};

/** QAT data spread wider than the calibration data, so a restarted observer lands far from the calibrated scale. */
const qatBatch = (step: number) => randn([8, 1, 6, 6], { generator: new Generator(100 + step) }).mul(1.6);
const labels = tensor(Int32Array.from([0, 1, 2, 0, 1, 2, 0, 1]), [8]);

/** Activation fake-quants (per tensor, non-learnable) by name. */
function activationFakeQuants(m: Module): [string, FakeQuantize][] {
  return m
    .namedModules()
    .filter(
      (e): e is [string, FakeQuantize] =>
        e[1] instanceof FakeQuantize && e[1].options.chAxis === -1 && !e[1].options.learnable,
    );
}

const scaleOf = (fq: FakeQuantize) => fq.scale.values()[0]!;

interface Trained {
  /** Activation scales after each step, by fake-quant name. */
  scales: Map<string, number[]>;
  /** The min/max of what each activation fake-quant saw in each QAT step. */
  batchRanges: Map<string, [number, number][]>;
}

/** startQat with `sd`, then four SGD steps on the QAT data; records scales and what each observer saw. */
function trainFourSteps(model: Module, sd: StateDict): Trained {
  startQat(model, sd);
  const scales = new Map<string, number[]>();
  const batchRanges = new Map<string, [number, number][]>();
  for (const [name, fq] of activationFakeQuants(model)) {
    scales.set(name, []);
    batchRanges.set(name, []);
    fq.registerForwardPreHook((_m, args) => {
      const v = (args[0] as Tensor).values();
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < v.length; i++) {
        lo = Math.min(lo, v[i]!);
        hi = Math.max(hi, v[i]!);
      }
      batchRanges.get(name)!.push([lo, hi]);
    });
  }
  const opt = new SGD(model.parameters(), { lr: 0.05 });
  const loss = new CrossEntropyLoss();
  for (let step = 0; step < 4; step++) {
    const l = loss.call((model as unknown as { call(x: Tensor): Tensor }).call(qatBatch(step)), labels);
    opt.zeroGrad();
    l.backward();
    opt.step();
    for (const [name, fq] of activationFakeQuants(model)) scales.get(name)!.push(scaleOf(fq));
  }
  return { scales, batchRanges };
}

/** What a per-tensor min_max observer with averaging constant `c` gives, starting from [min, max] (null: fresh). */
function movingAverageScales(start: [number, number] | null, batches: [number, number][], c: number): number[] {
  let r = start;
  return batches.map(([lo, hi]) => {
    r = r === null ? [lo, hi] : [r[0] + c * (lo - r[0]), r[1] + c * (hi - r[1])];
    return scaleFromRange(r[0], r[1], 'qint8');
  });
}

let dir: string;
beforeEach(() => setMarch('bayes'));
afterEach(() => resetMarch());
afterAll(() => dir && rmSync(dir, { recursive: true, force: true }));

/** Calibrates a prepared SmallNet and writes its state dict to a file; returns the file and the calibrated model. */
async function calibratedFile(name: string, q: QConfig = calibQconfig()): Promise<{ path: string; calib: Module }> {
  dir ??= mkdtempSync(join(tmpdir(), 'qtk-calib-qat-'));
  const calib = prepareQatFx(smallNet(1), { global: q });
  calibrate(calib, calibBatches(5));
  const path = join(dir, `${name}.qtk`);
  await saveStateDict(calib.stateDict(), path);
  return { path, calib };
}

/**
 * Trains four steps from the file at `path` (or `first`, already loaded from it) with averaging constant 0, which
 * keeps every calibrated scale, then 0.01, which moves each from it as a moving average started at ±s·127.5.
 */
async function expectResumesFromScales(before: Map<string, number>, path: string, first?: StateDict): Promise<Trained> {
  const fixed = trainFourSteps(
    prepareQatFx(smallNet(2), { global: qatQconfig(0) }),
    first ?? (await loadStateDictFile(path)),
  );
  for (const [name, s] of before) expect(fixed.scales.get(name), name).toEqual([s, s, s, s]);
  const moving = trainFourSteps(prepareQatFx(smallNet(2), { global: qatQconfig(0.01) }), await loadStateDictFile(path));
  for (const [name, s] of before) {
    // the symmetric range ±s·(qmax − qmin)/2 gives back exactly s
    const a = s * 127.5;
    expect(moving.scales.get(name), name).toEqual(movingAverageScales([-a, a], moving.batchRanges.get(name)!, 0.01));
  }
  return moving;
}

function calibratedScales(calib: Module): Map<string, number> {
  return new Map(activationFakeQuants(calib).map(([n, fq]) => [n, scaleOf(fq)]));
}

describe('calibration -> QAT hand-off', () => {
  it('averagingConstant 0: every calibrated activation scale stays exactly as calibrated through four SGD steps', async () => {
    const { path, calib } = await calibratedFile('c0');
    const before = calibratedScales(calib);
    expect(before.size).toBeGreaterThanOrEqual(4); // the stub's, conv+bn+relu's, the add's, the pool's, the linear's
    const qat = prepareQatFx(smallNet(2), { global: qatQconfig(0) });
    const { scales, batchRanges } = trainFourSteps(qat, await loadStateDictFile(path));
    for (const [name, s] of before) {
      expect(batchRanges.get(name)!.length, name).toBe(4);
      expect(scales.get(name), name).toEqual([s, s, s, s]);
      // a restarted observer would have taken the first QAT batch's range instead
      expect(movingAverageScales(null, batchRanges.get(name)!, 0)[3], name).not.toBe(s);
    }
  });

  it('averagingConstant 0.01: scales move from the calibrated statistics, not from the first QAT batch', async () => {
    const { path, calib } = await calibratedFile('c001');
    const before = calibratedScales(calib);
    const calibRanges = new Map(
      activationFakeQuants(calib).map(([n, fq]) => [
        n,
        (fq.observer as unknown as { minMax: { min: Float64Array; max: Float64Array } }).minMax,
      ]),
    );
    const qat = prepareQatFx(smallNet(2), { global: qatQconfig(0.01) });
    const { scales, batchRanges } = trainFourSteps(qat, await loadStateDictFile(path));
    for (const [name, s0] of before) {
      const r = calibRanges.get(name)!;
      const resumed = movingAverageScales([r.min[0]!, r.max[0]!], batchRanges.get(name)!, 0.01);
      const fresh = movingAverageScales(null, batchRanges.get(name)!, 0.01);
      const got = scales.get(name)!;
      expect(got, name).toEqual(resumed);
      expect(got[3], name).not.toBe(s0); // it moves
      expect(Math.abs(got[3]! / s0 - 1), name).toBeLessThan(0.05); // but only a little in four steps
      expect(Math.abs(got[3]! - s0), name).toBeGreaterThan(Math.abs(got[0]! - s0) * 0.999); // away from the start
      expect(Math.abs(fresh[3]! - got[3]!), name).toBeGreaterThan(Math.abs(got[3]! - s0)); // nowhere near a restart
    }
  });

  for (const observer of ['mse', 'kl', 'percentile'] as const) {
    it(`calibrated with '${observer}', trained with min_max: resumes from the calibrated scale (0 fixed, 0.01 moves from it)`, async () => {
      const { path, calib } = await calibratedFile(`other-${observer}`, calibQconfig(observer, {}));
      const before = calibratedScales(calib);
      for (const [, fq] of activationFakeQuants(calib)) expect(fq.observer.name).toBe(observer);
      const moving = await expectResumesFromScales(before, path);
      for (const [name, s] of before) expect(moving.scales.get(name)![3], name).not.toBe(s);
    });
  }

  it('a version-1 file (scales, no observer statistics) resumes from the calibrated scales', async () => {
    const { calib } = await calibratedFile('v1');
    const before = calibratedScales(calib);
    const sd = calib.stateDict();
    delete sd.extra;
    const v3 = serializeStateDict(sd);
    // what the writer produced before extra states existed: version 1, a 16-byte prefix (no CRC), the same header and data
    const bytes = new Uint8Array(v3.byteLength - 8);
    bytes.set(v3.subarray(0, 16));
    bytes.set(v3.subarray(24), 16);
    new DataView(bytes.buffer, bytes.byteOffset).setUint32(8, 1, true);
    const header = new TextDecoder().decode(bytes.subarray(16, 24));
    expect(header).toBe('{"versio');
    bytes.set(new TextEncoder().encode('{"version":1'), 16);
    const path = join(dir, 'v1.qtk');
    writeFileSync(path, bytes);
    const loaded = await loadStateDictFile(path);
    expect(loaded.extra).toBeUndefined();
    await expectResumesFromScales(before, path, loaded);
  });

  it('a state dict file restores every observer state exactly', async () => {
    const { path, calib } = await calibratedFile('roundtrip', calibQconfig('min_max', { averagingConstant: 0.3 }));
    const other = prepareQatFx(smallNet(3), { global: calibQconfig('min_max', { averagingConstant: 0.3 }) });
    other.loadStateDict(await loadStateDictFile(path));
    const want = new Map(calib.namedModules().filter(([, m]) => m instanceof FakeQuantize) as [string, FakeQuantize][]);
    const got = other.namedModules().filter(([, m]) => m instanceof FakeQuantize) as [string, FakeQuantize][];
    expect(got.map(([n]) => n)).toEqual([...want.keys()]);
    for (const [name, fq] of got) {
      expect(fq.observer.hasData(), name).toBe(true);
      expect(fq.observer.state(), name).toEqual(want.get(name)!.observer.state());
    }
    // and calibration continues where it stopped: one more batch gives the same scales in both
    const more = calibBatches(6).slice(5);
    calibrate(calib, more);
    calibrate(other, more);
    for (const [name, fq] of got)
      expect(Array.from(fq.scale.values()), name).toEqual(Array.from(want.get(name)!.scale.values()));
  });
});
