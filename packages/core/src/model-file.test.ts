import '@qtk/march-bayes';
import '@qtk/march-bernoulli2';
import {
  defaultLsqQconfig,
  defaultQat16bitQconfig,
  defaultQatOutQconfig,
  defaultQatQconfig,
  FakeQuantize,
  namedFakeQuants,
  setFakeQuantize,
} from '@qtk/fake-quant';
import { FixedAvgPool2d, FixedConv, Quantize } from '@qtk/fixed-point';
import { GraphModule, SerializationError, symbolicTrace } from '@qtk/ir';
import { crc32, deepCopy, LayerNorm, Module, Parameter } from '@qtk/nn';
import { saveStateDictSync } from '@qtk/nn/node';
import { QTK_VERSION, StateVersionError } from '@qtk/spec';
import { Generator, rand, randn, type Tensor } from '@qtk/tensor';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  calibrate,
  convertFx,
  modelFromBytes,
  modelHeaderFromBytes,
  modelInfoOf,
  ModelFileError,
  modelToBytes,
  prepareQatFx,
  QatModule,
  LayerNormQat,
  resetMarch,
  setMarch,
  SoftmaxQat,
} from './index.js';
import { loadModelFile, loadModelFileSync, readModelFileHeader, saveModelFile, saveModelFileSync } from './node.js';
import { calibratedQat, callModel, setBatchNormStats } from './testing/convert-harness.js';
import { ConvBnReluNet, LayerNormSoftmax } from '@qtk/test-models';

const batch = (seed: number): Tensor =>
  rand([3, 2, 9, 9], { generator: new Generator(seed) })
    .mul(2)
    .sub(1);

/** conv-bn-relu stem, conv-bn-relu, conv-bn + residual add + relu, max- and avg-pool, global pool, high-precision Linear. */
function floatModel(): ConvBnReluNet {
  const generator = new Generator(7);
  const model = new ConvBnReluNet({
    generator,
    inChannels: 2,
    channels: 6,
    classes: 5,
    convBias: [false, true, false],
    residual: true,
    downsample: true,
  });
  setBatchNormStats([model.bn1, model.bn2, model.bn3!], 50);
  return model.eval();
}

function qatModel(): GraphModule {
  return calibratedQat(floatModel(), { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } }, [
    batch(1),
    batch(2),
  ]);
}

const run = (gm: GraphModule, x: Tensor): Tensor => callModel(gm, x);
const values = (t: Tensor): number[] => Array.from(t.values());

const dir = mkdtempSync(join(tmpdir(), 'qtk-model-file-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
/** A model file's bytes with its header (as JSON) and graph (as text) edited, the lengths and checksum rewritten. */
function rebuilt(
  bytes: Uint8Array,
  edit: { header?: (h: Record<string, unknown>) => Record<string, unknown>; graph?: (g: string) => string },
): Uint8Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const [h, g] = [dv.getUint32(12, true), dv.getUint32(16, true)];
  const text = (a: number, b: number) => new TextDecoder().decode(bytes.subarray(a, b));
  const header = new TextEncoder().encode(JSON.stringify((edit.header ?? ((x) => x))(JSON.parse(text(32, 32 + h)))));
  const graph = new TextEncoder().encode((edit.graph ?? ((x) => x))(text(32 + h, 32 + h + g)));
  const state = bytes.subarray(32 + h + g);
  const out = new Uint8Array(32 + header.byteLength + graph.byteLength + state.byteLength);
  out.set(bytes.subarray(0, 32));
  out.set(header, 32);
  out.set(graph, 32 + header.byteLength);
  out.set(state, 32 + header.byteLength + graph.byteLength);
  const odv = new DataView(out.buffer);
  odv.setUint32(12, header.byteLength, true);
  odv.setUint32(16, graph.byteLength, true);
  odv.setUint32(20, crc32(out.subarray(32)), true);
  return out;
}

const tmpFiles = () => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('model files', () => {
  it('round-trips a float model: outputs identical, kind float, meta kept', async () => {
    const gm = symbolicTrace(floatModel());
    const path = join(dir, 'float.qtkm');
    await saveModelFile(gm, path, { meta: { inputShape: [1, 2, 9, 9], classes: ['a', 'b', 'c', 'd', 'e'] } });
    const loaded = await loadModelFile(path);
    expect(loaded.kind).toBe('float');
    expect(loaded.march).toBeNull();
    expect(loaded.meta).toEqual({ inputShape: [1, 2, 9, 9], classes: ['a', 'b', 'c', 'd', 'e'] });
    expect(loaded.model.training).toBe(false);
    expect(loaded.model.printTabular()).toBe(gm.printTabular());
    const x = batch(9);
    expect(values(run(loaded.model, x))).toEqual(values(run(gm, x)));
  });

  it('round-trips a prepared, calibrated QAT model: identical outputs, scales, fake-quant states and observer statistics', () => {
    const gm = qatModel();
    const fqs = namedFakeQuants(gm) as [string, FakeQuantize][];
    // mixed states, each must come back as it was
    const states = ['VALIDATION', 'QAT', 'CALIBRATION'] as const;
    fqs.forEach(([, fq], i) => {
      fq.setFakeQuantState(states[i % 3]!);
    });
    const path = join(dir, 'qat.qtkm');
    saveModelFileSync(gm, path);
    const { model, kind } = loadModelFileSync(path);
    expect(kind).toBe('qat');
    expect(model.printTabular()).toBe(gm.printTabular());
    const back = new Map(namedFakeQuants(model) as [string, FakeQuantize][]);
    expect([...back.keys()]).toEqual(fqs.map(([n]) => n));
    for (const [name, fq] of fqs) {
      const b = back.get(name)!;
      expect(b).toBeInstanceOf(FakeQuantize);
      expect(b.fakeQuantState).toBe(fq.fakeQuantState);
      expect(b.options).toEqual(fq.options);
      expect(values(b.scale)).toEqual(values(fq.scale));
      expect(b.isInitialized).toBe(true);
      expect(b.observer.state()).toEqual(fq.observer.state());
    }
    expect(model.getSubmodule('fc')).toBeInstanceOf(QatModule);
    expect((model.getSubmodule('fc') as QatModule).activationPostProcess).toBeNull();
    expect((model.getSubmodule('fc') as QatModule).weightFakeQuant).toBeInstanceOf(FakeQuantize);

    setFakeQuantize(gm, 'VALIDATION');
    setFakeQuantize(model, 'VALIDATION');
    for (const seed of [11, 12]) {
      const x = batch(seed);
      expect(values(run(model, x))).toEqual(values(run(gm, x)));
    }
  });

  it('an LSQ model keeps its learned scales (Parameters)', () => {
    const gm = prepareQatFx(
      floatModel(),
      { global: defaultLsqQconfig, moduleName: { fc: defaultQatOutQconfig } },
      { march: 'bayes' },
    );
    calibrate(gm, [batch(1)]);
    setFakeQuantize(gm, 'VALIDATION');
    const fq = namedFakeQuants(gm)[1]![1] as FakeQuantize;
    const scale = fq.scale.values();
    scale[0] = scale[0]! * 1.25; // as if trained
    const { model } = modelFromBytes(modelToBytes(gm));
    const back = new Map(namedFakeQuants(model) as [string, FakeQuantize][]).get(namedFakeQuants(gm)[1]![0])!;
    expect(back.scale).toBeInstanceOf(Parameter);
    expect(values(back.scale)).toEqual(values(fq.scale));
    const x = batch(13);
    expect(values(run(model, x))).toEqual(values(run(gm, x)));
  });

  it('a calibration or QAT state continues from the saved observer statistics', () => {
    const gm = qatModel();
    setFakeQuantize(gm, 'CALIBRATION');
    const { model } = modelFromBytes(modelToBytes(gm));
    for (const m of [gm, model]) {
      calibrate(m, [batch(30)]);
      setFakeQuantize(m, 'VALIDATION');
    }
    const x = batch(31);
    expect(values(run(model, x))).toEqual(values(run(gm, x)));
  });

  for (const march of ['bayes', 'bernoulli2'] as const) {
    it(`round-trips the ${march} fixed-point model bit-exactly`, async () => {
      const fixed = convertFx(qatModel(), { march, onWarning: () => {} });
      const types = fixed.namedModules().map(([, m]) => m.constructor.name);
      expect(types).toEqual(
        expect.arrayContaining(['Quantize', 'FixedConv', 'FixedAvgPool2d', 'FixedValueOp', 'Dequantize']),
      );
      const path = join(dir, `fixed-${march}.qtkm`);
      // kind and march come from what convertFx recorded
      await saveModelFile(fixed, path, { meta: { inputShape: [1, 2, 9, 9] } });
      expect((await readModelFileHeader(path)).kind).toBe('fixed-point');
      const loaded = await loadModelFile(path);
      expect([loaded.kind, loaded.march]).toEqual(['fixed-point', march]);
      expect(modelInfoOf(loaded.model)).toEqual({ kind: 'fixed-point', march });
      const model = loaded.model;
      expect(model.namedModules().map(([, m]) => m.constructor.name)).toEqual(types);
      expect(model.printTabular()).toBe(fixed.printTabular());
      const pool = model.namedModules().find(([, m]) => m instanceof FixedAvgPool2d)![1] as FixedAvgPool2d;
      expect(pool.rule).toBe(march === 'bayes' ? 'wide' : 'int16_intermediate');
      for (const [name, m] of fixed.namedModules()) {
        if (m instanceof FixedConv)
          expect(values((model.getSubmodule(name) as FixedConv).config.weight)).toEqual(values(m.config.weight));
        if (m instanceof Quantize) expect((model.getSubmodule(name) as Quantize).scale).toBe(m.scale);
      }
      for (const seed of [21, 22]) {
        const x = batch(seed);
        expect(values(run(model, x))).toEqual(values(run(fixed, x)));
      }
    });
  }

  describe('bayes composites', () => {
    afterEach(() => resetMarch());
    it('SoftmaxQat / LayerNormQat and FixedSoftmax / FixedLayerNorm round-trip', () => {
      setMarch('bayes');
      const net = new LayerNormSoftmax().eval();
      net.norm.weight!.values().set(
        rand([6], { generator: new Generator(3) })
          .add(0.5)
          .values() as Float32Array,
      );
      const gm = prepareQatFx(net, { global: defaultQat16bitQconfig }, { march: 'bayes' });
      const x = randn([4, 6], { generator: new Generator(4) });
      calibrate(gm, [x]);
      setFakeQuantize(gm, 'VALIDATION');
      const qat = modelFromBytes(modelToBytes(gm)).model;
      const types = (m: GraphModule) => m.namedModules().map(([p, mm]) => `${p}:${mm.constructor.name}`);
      expect(types(qat)).toEqual(types(gm));
      expect(types(qat).some((t) => t.endsWith(':SoftmaxQat'))).toBe(true);
      expect(types(qat).some((t) => t.endsWith(':LayerNormQat'))).toBe(true);
      const soft = qat.modules().find((m) => m instanceof SoftmaxQat) as SoftmaxQat;
      expect(soft.steps.exp).toBe(soft.getChild('exp_fake_quant'));
      expect((qat.modules().find((m) => m instanceof LayerNormQat) as LayerNormQat).float).toBeInstanceOf(LayerNorm);
      const y = randn([4, 6], { generator: new Generator(5) });
      expect(values(run(qat, y))).toEqual(values(run(gm, y)));
      const fixed = convertFx(gm, { onWarning: () => {} });
      const back = modelFromBytes(modelToBytes(fixed, { march: 'bayes' })).model;
      expect(types(back)).toEqual(types(fixed));
      expect(types(back).some((t) => t.endsWith(':FixedSoftmax'))).toBe(true);
      expect(values(run(back, y))).toEqual(values(run(fixed, y)));
    });
  });

  it('convertFx records kind and march on its result; deepCopy keeps them, the input QAT model keeps its own', () => {
    const qat = qatModel();
    expect(modelInfoOf(qat)).toEqual({ kind: 'qat', march: 'bayes' });
    const fixed = convertFx(qat, { march: 'bernoulli2', onWarning: () => {} });
    expect(modelInfoOf(fixed)).toEqual({ kind: 'fixed-point', march: 'bernoulli2' });
    expect(modelInfoOf(qat)).toEqual({ kind: 'qat', march: 'bayes' });
    expect(modelInfoOf(deepCopy(fixed))).toEqual({ kind: 'fixed-point', march: 'bernoulli2' });
    expect(modelHeaderFromBytes(modelToBytes(qat))).toMatchObject({ kind: 'qat', march: 'bayes' });
  });

  it('convertFx without a march converts for the march the model was prepared for, not setMarch', () => {
    setMarch('bernoulli2');
    try {
      const qat = prepareQatFx(floatModel(), { global: defaultQatQconfig }, { march: 'bayes' });
      calibrate(qat, [batch(1)]);
      expect(modelInfoOf(convertFx(qat, { onWarning: () => {} })).march).toBe('bayes');
    } finally {
      resetMarch();
    }
  });

  it('a fixed-point model that records no march needs one; an explicit one wins', () => {
    const fixed = convertFx(qatModel(), { march: 'bayes', onWarning: () => {} });
    fixed.meta = {};
    expect(() => modelToBytes(fixed)).toThrow(/records no march/);
    expect(() => modelToBytes(fixed, { kind: 'fixed-point' })).toThrow(/records no march/);
    expect(modelHeaderFromBytes(modelToBytes(fixed, { kind: 'fixed-point', march: 'bayes' })).march).toBe('bayes');
  });

  it('a file whose graph carries no meta (written before models recorded it) loads with kind and march from its header', () => {
    const fixed = convertFx(qatModel(), { march: 'bernoulli2', onWarning: () => {} });
    fixed.meta = {};
    const bytes = modelToBytes(fixed, { kind: 'fixed-point', march: 'bernoulli2' });
    expect(new TextDecoder().decode(bytes)).not.toContain('"meta":{"kind"');
    const loaded = modelFromBytes(bytes);
    expect(modelInfoOf(loaded.model)).toEqual({ kind: 'fixed-point', march: 'bernoulli2' });
    expect(modelHeaderFromBytes(modelToBytes(loaded.model))).toMatchObject({
      kind: 'fixed-point',
      march: 'bernoulli2',
    });
  });

  describe('bad files give typed errors naming the file', () => {
    const good = modelToBytes(symbolicTrace(floatModel()));
    const write = (name: string, bytes: Uint8Array | string) => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    };

    it('truncated', async () => {
      for (const n of [20, 40, good.byteLength - 1, Math.floor(good.byteLength / 2)]) {
        const p = write('cut.qtkm', good.subarray(0, n));
        const err = await loadModelFile(p).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(SerializationError);
        expect(err).toBeInstanceOf(ModelFileError);
        expect((err as Error).message).toContain(p);
        expect((err as Error).message).toMatch(/truncated/);
      }
    });

    it('wrong version', () => {
      const newer = good.slice();
      new DataView(newer.buffer).setUint32(8, 2, true);
      const p = write('v2.qtkm', newer);
      expect(() => loadModelFileSync(p)).toThrow(StateVersionError);
      expect(() => loadModelFileSync(p)).toThrow(
        /v2\.qtkm: model file version 2 \(written by QTK [\d.]+\) is newer .*upgrade/,
      );
      const zero = good.slice();
      new DataView(zero.buffer).setUint32(8, 0, true);
      expect(() => modelFromBytes(zero, 'zero.qtkm')).toThrow(StateVersionError);
    });

    it('a file from a newer QTK names the version that wrote it', () => {
      expect(modelHeaderFromBytes(good).writer).toEqual({ qtk: QTK_VERSION });
      // the same model as QTK 9.9.0 would write it, with a module class this QTK does not know
      const future = rebuilt(good, {
        header: (h) => ({ ...h, writer: { qtk: '9.9.0' } }),
        graph: (g) => g.replace(/"Conv2d"/g, '"Conv2dFromTheFuture"'),
      });
      expect(() => modelFromBytes(future, 'future.qtkm')).toThrow(
        `the file was written by QTK 9.9.0, newer than this QTK (${QTK_VERSION}): upgrade @qtk/core (or the qtk CLI) to 9.9.0 or later`,
      );
      const container = future.slice();
      new DataView(container.buffer).setUint32(8, 2, true);
      expect(() => modelFromBytes(container, 'v2.qtkm')).toThrow(
        `v2.qtkm: model file version 2 (written by QTK 9.9.0) is newer than this QTK (${QTK_VERSION}) reads (1)`,
      );
      // a file written before files recorded their writer loads as before
      const old = rebuilt(good, { header: ({ writer: _, ...h }) => h });
      expect(modelHeaderFromBytes(old).writer).toBeUndefined();
      expect(modelFromBytes(old).kind).toBe('float');
    });

    it('not a QTK model file (text, a state dict file), corrupted, missing', async () => {
      const text = write('notes.txt', 'hello, this is not a model\n');
      expect(() => loadModelFileSync(text)).toThrow(SerializationError);
      expect(() => loadModelFileSync(text)).toThrow(/notes\.txt: not a QTK model file/);
      const sd = join(dir, 'weights.qtk');
      saveStateDictSync(symbolicTrace(floatModel()).stateDict(), sd);
      expect(() => loadModelFileSync(sd)).toThrow(/weights\.qtk: not a QTK model file/);
      const flipped = good.slice();
      flipped[flipped.byteLength - 3] = flipped[flipped.byteLength - 3]! ^ 0x40;
      expect(() => modelFromBytes(flipped, 'flip.qtkm')).toThrow(/flip\.qtkm: corrupted/);
      const err = await loadModelFile(join(dir, 'missing.qtkm')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ModelFileError);
      expect((err as Error).message).toMatch(/missing\.qtkm: cannot read/);
    });
  });

  it('a failed save leaves an existing file untouched and no temporary file', async () => {
    const path = join(dir, 'keep.qtkm');
    await saveModelFile(symbolicTrace(floatModel()), path);
    const before = readFileSync(path);

    class Custom extends Module {
      forward(x: Tensor): Tensor {
        return x.mul(2);
      }
    }
    const custom = new GraphModule(floatModel(), symbolicTrace(floatModel()).graph);
    custom.addSubmodule('relu1', new Custom());
    await expect(saveModelFile(custom, path)).rejects.toThrow(/without a serialization codec: 'relu1' \(Custom\)/);
    expect(readFileSync(path).equals(before)).toBe(true);

    const asDir = join(dir, 'a-directory.qtkm');
    mkdirSync(join(asDir, 'inside'), { recursive: true });
    expect(() => saveModelFileSync(symbolicTrace(floatModel()), asDir)).toThrow(ModelFileError);
    await expect(saveModelFile(symbolicTrace(floatModel()), asDir)).rejects.toThrow(/could not save the model/);
    expect(readdirSync(asDir)).toEqual(['inside']);
    expect(tmpFiles()).toEqual([]);
    expect(loadModelFileSync(path).kind).toBe('float');
  });
});
