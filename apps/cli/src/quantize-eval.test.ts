import '@qtk/march-bayes';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calibrate, prepareQatFx } from '@qtk/core';
import { QTensor } from '@qtk/fixed-point';
import { loadModelFileSync, saveModelFileSync } from '@qtk/core/node';
import { defaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { BatchNorm2d, parseNpy } from '@qtk/nn';
import { loadFashionMnist } from '@qtk/nn/node';
import { importOnnx } from '@qtk/onnx/node';
import { Generator, noGrad, rand, Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  BadForBernoulli2,
  correctCount,
  npyBytes,
  pngBytes,
  randomNpy,
  run,
  runQuantize,
  tempDir,
  TinyNet,
  writeOnnx,
} from './testing/fixtures.js';

/** Two fixed-point models of one network give integer outputs of the same size that differ somewhere. */
function expectOtherIntegerOutputs(a: GraphModule, b: GraphModule): void {
  const x = rand([8, 1, 28, 28], { low: -1, high: 1, generator: new Generator(7) });
  const ints = (m: GraphModule) => Array.from((noGrad(() => m.call(x)) as QTensor).ints());
  const [ya, yb] = [ints(a), ints(b)];
  expect(yb.length).toBe(ya.length);
  expect(yb.some((v, i) => v !== ya[i])).toBe(true);
}

const SUBSET = join(__dirname, '../../../data/fashion-mnist-subset');
let dir: string;
let tiny: string;
let bad: string;
let calib: string;
let evalDir: string;

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(3);
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(g));
  bad = writeOnnx(join(dir, 'bad.onnx'), new BadForBernoulli2(g));
  calib = join(dir, 'calib');
  mkdirSync(calib);
  for (let i = 0; i < 3; i++) writeFileSync(join(calib, `s${i}.npy`), randomNpy([1, 28, 28], g));
  writeFileSync(join(calib, 'batch.npy'), randomNpy([5, 1, 28, 28], g));
  // a greyscale 28×28 gradient and an RGB 32×32 image (resized)
  const grey = new Uint8Array(28 * 28 * 4);
  for (let i = 0; i < 28 * 28; i++) {
    grey.fill(i % 256, 4 * i, 4 * i + 3);
    grey[4 * i + 3] = 255;
  }
  writeFileSync(join(calib, 'img0.png'), pngBytes(28, 28, grey));
  const rgb = new Uint8Array(32 * 32 * 4).map((_, i) => (i % 4 === 3 ? 255 : (i * 37) % 256));
  writeFileSync(join(calib, 'img1.png'), pngBytes(32, 32, rgb));

  evalDir = join(dir, 'eval');
  mkdirSync(evalDir);
  const x = rand([20, 1, 28, 28], { low: -1, high: 1, generator: g });
  writeFileSync(join(evalDir, 'a.npy'), npyBytes([12, 1, 28, 28], (x.values() as Float32Array).subarray(0, 12 * 784)));
  writeFileSync(join(evalDir, 'b.npy'), npyBytes([8, 1, 28, 28], (x.values() as Float32Array).subarray(12 * 784)));
  writeFileSync(
    join(evalDir, 'labels.txt'),
    `${Array.from({ length: 20 }, (_, i) => String((i * 7) % 10)).join('\n')}\n`,
  );
});

function evalInputs(): { x: Tensor; labels: number[] } {
  const parts = ['a.npy', 'b.npy'].map((f) => parseNpy(readFileSync(join(evalDir, f))).data as Float32Array);
  const data = new Float32Array(20 * 784);
  data.set(parts[0]!);
  data.set(parts[1]!, 12 * 784);
  const labels = readFileSync(join(evalDir, 'labels.txt'), 'utf8').trim().split('\n').map(Number);
  return { x: new Tensor({ data, shape: [20, 1, 28, 28], dtype: 'float32' }), labels };
}

describe('qtk quantize and qtk eval', () => {
  it('quantizes from .npy and PNG files, writes a fixed-point model file and summarises it', async () => {
    const out = join(dir, 'tiny-bayes.qtk');
    const r = await runQuantize(tiny, calib, out, {
      march: 'bayes',
      observer: 'mse',
      mean: '0.5',
      std: '0.5',
      batch: '4',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // 3 single samples + a batch of 5 + 2 images
    expect(r.stdout).toContain(`calibration: 10 samples of shape [1, 28, 28] from 6 file(s) in ${calib}`);
    expect(r.stdout).toMatch(/^march:\s+bayes$/m);
    expect(r.stdout).toMatch(/^observer:\s+mse \(activations\)/m);
    expect(r.stdout).toMatch(/^dtypes:\s+activations qint8; weights qint8$/m);
    expect(r.stdout).toContain(`written:      ${out}`);
    // one line as each stage starts, then the summary
    expect(r.stdout.split('\n').map((l) => l.split(':')[0])).toEqual(
      expect.arrayContaining(['import', 'calibration', 'conversion', 'writing', 'march']),
    );
    expect(r.stdout).toMatch(
      /^import: {6}\S+tiny\.onnx\ncalibration: .*\nconversion: {2}to fixed point for bayes\nwriting: {5}\S+\.qtk\nmarch:/m,
    );
    expect(r.stdout).toMatch(
      /^agreement: {4}max \|fixed-point - fake-quant\| = \S+ \(output units, \S+ % of the output range \S+\) on the first 4 calibration samples$/m,
    );

    const loaded = loadModelFileSync(out);
    expect(loaded.kind).toBe('fixed-point');
    expect(loaded.march).toBe('bayes');
    expect(loaded.meta).toMatchObject({
      march: 'bayes',
      observer: 'mse',
      inputShape: [null, 1, 28, 28],
      preprocess: { mean: [0.5], std: [0.5] },
    });
    const converted = [...loaded.model.graph.nodes].filter((n) => n.op === 'call_module').length;
    // quantize stub, conv+relu, pool, flatten, fc
    expect(converted).toBe(5);
    expect(r.stdout).toMatch(new RegExp(`^nodes:\\s+${converted} converted to fixed point \\(`, 'm'));

    // eval on .npy files with labels = evaluating the loaded model directly
    const { x, labels } = evalInputs();
    const want = correctCount(loaded.model, x, labels);
    const e = await run('eval', out, '--data', evalDir, '--batch', '7');
    expect(e.stderr).toBe('');
    expect(e.code).toBe(0);
    expect(e.stdout).toContain(`(fixed-point, march bayes)`);
    expect(e.stdout).toContain(`accuracy:  ${((100 * want) / 20).toFixed(2)}% (${want} / 20)`);

    // and the float ONNX model, likewise
    const float = importOnnx(tiny);
    const wantFloat = correctCount(float, x, labels);
    const f = await run('eval', tiny, '--data', evalDir);
    expect(f.code).toBe(0);
    expect(f.stdout).toContain(`(${wantFloat} / 20)`);
  });

  it('evaluates on IDX files (the repository subset) like a direct evaluation', async () => {
    const out = join(dir, 'tiny-b2.qtk');
    const q = await runQuantize(tiny, calib, out, { march: 'bernoulli2', 'input-scale': 'auto' });
    expect(q.code).toBe(0);
    expect(q.stdout).toMatch(/^march:\s+bernoulli2$/m);
    const d = loadFashionMnist(SUBSET, { split: 'test', limit: 300 });
    const labels = d.labels.values();
    const want = correctCount(loadModelFileSync(out).model, d.images, labels);
    const e = await run('eval', out, '--data', SUBSET, '--limit', '300');
    expect(e.code).toBe(0);
    expect(e.stdout).toContain('IDX test split');
    expect(e.stdout).toContain(`(${want} / 300)`);
  });

  it('evaluates QAT and float model files like a direct evaluation', async () => {
    const float = importOnnx(tiny);
    const qat = prepareQatFx(
      float,
      { global: defaultQatQconfig },
      { march: 'bayes', inputQuantStubs: { scale: 1 / 128 } },
    );
    calibrate(qat, [rand([8, 1, 28, 28], { low: -1, high: 1, generator: new Generator(5) })]);
    const { x, labels } = evalInputs();
    // the QAT model records the march it was prepared for, and the file keeps it
    for (const [kind, model, label] of [
      ['qat', qat, 'qat, march bayes'],
      ['float', float, 'float'],
    ] as const) {
      const path = join(dir, `tiny-${kind}.qtk`);
      saveModelFileSync(model, path, { kind, meta: { inputShape: [null, 1, 28, 28] } });
      const want = correctCount(loadModelFileSync(path).model, x, labels);
      const e = await run('eval', path, '--data', evalDir);
      expect(e.stderr).toBe('');
      expect(e.stdout).toContain(`(${label})`);
      expect(e.stdout).toContain(`(${want} / 20)`);
    }
  });

  it('lists every operator bernoulli2 cannot convert and writes nothing', async () => {
    const out = join(dir, 'bad.qtk');
    const r = await run('quantize', bad, '--calib', calib, '--march', 'bernoulli2', '--out', out);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("march 'bernoulli2' cannot convert 3 node(s):");
    for (const n of ['lrelu: LeakyReLU', 'abs: abs', 'sm: Softmax']) expect(r.stderr).toContain(`  - ${n}`);
    // advice in the CLI's terms: the module names for --keep-float (the functional abs has none), not library code
    expect(r.stderr).toContain(
      'rerun with --hybrid to run these nodes on the CPU (a heterogeneous model), keep modules float with --keep-float lrelu,sm, or choose another march (--march bayes',
    );
    expect(r.stderr).not.toContain("import '@qtk/hybrid'");
    expect(r.stderr).not.toContain('prepareQatFx');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(() => readFileSync(out)).toThrow();
  });

  it('--keep-float keeps named modules float (step-wise): the converted model runs them between a dequantize and a quantize', async () => {
    const out = join(dir, 'tiny-keep.qtk');
    const r = await run('quantize', tiny, '--calib', calib, '--march', 'bayes', '--out', out, '--keep-float', 'pool');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^kept float:\s+pool$/m);
    const loaded = loadModelFileSync(out);
    expect(loaded.meta).toMatchObject({ keepFloat: ['pool'] });
    const fixed = loaded.model as GraphModule;
    const pool = fixed.graph.nodes.find((n) => n.op === 'call_module' && n.target === 'pool')!;
    expect(fixed.getSubmodule('pool').constructor.name).toBe('AvgPool2d');
    expect(pool.inputNodes.map((n) => fixed.getSubmodule(n.target).constructor.name)).toEqual(['Dequantize']);
    expect([...pool.users].map((n) => fixed.getSubmodule(n.target).constructor.name)).toEqual(['Quantize']);
    // the same ops bernoulli2 cannot convert, kept float by name: only the functional abs is left
    const bad2 = await runQuantize(bad, calib, join(dir, 'bad2.qtk'), {
      march: 'bernoulli2',
      'keep-float': 'lrelu,sm',
    });
    expect(bad2.code).toBe(1);
    expect(bad2.stderr).toContain("march 'bernoulli2' cannot convert 1 node(s):\n  - abs: abs");
    const typo = await runQuantize(tiny, calib, join(dir, 'typo.qtk'), { 'keep-float': 'pool,conv9' });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("--keep-float: no module named 'conv9' in the model; its modules are: ");
    expect(typo.stderr).toContain('pool');
  });

  it("--bias-correction corrects the biases for the weights' quantization: recorded, and the biases differ", async () => {
    const plain = join(dir, 'tiny-plain.qtk');
    const corrected = join(dir, 'tiny-bc.qtk');
    expect((await runQuantize(tiny, calib, plain)).code).toBe(0);
    const r = await runQuantize(tiny, calib, corrected, { 'bias-correction': true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^observer: .*; biases corrected for the weights' quantization$/m);
    const a = loadModelFileSync(plain);
    const b = loadModelFileSync(corrected);
    expect(b.meta).toMatchObject({ biasCorrection: true });
    expect(a.meta).not.toHaveProperty('biasCorrection');
    // the same scales, other integer biases: the outputs move
    expectOtherIntegerOutputs(a.model as GraphModule, b.model as GraphModule);
  });

  it('--analytic-bias-correction derives the input means from the BatchNorms: the summary line, the model file', async () => {
    const g = new Generator(11);
    const net = new (class extends TinyNet {
      readonly bn = new BatchNorm2d(4);
      override forward(x: Tensor): Tensor {
        return this.fc.call(this.flat.call(this.pool.call(this.relu.call(this.bn.call(this.conv.call(x))))));
      }
    })(g).eval();
    net.bn.runningMean!.values().set([0.1, -0.2, 0.3, 0]);
    net.bn.runningVar!.values().set([0.5, 2, 1, 0.25]);
    net.bn.bias!.values().set([0.5, -0.5, 1, 0]);
    const onnx = writeOnnx(join(dir, 'tiny-bn.onnx'), net);
    const plain = join(dir, 'tiny-bn.qtk');
    const corrected = join(dir, 'tiny-bn-abc.qtk');
    expect((await runQuantize(onnx, calib, plain)).code).toBe(0);
    const r = await runQuantize(onnx, calib, corrected, { 'analytic-bias-correction': true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // the linear layer after the flatten is corrected; the conv, fed by the model input, is not
    expect(r.stdout).toMatch(
      /^bias: +1 layer\(s\) corrected from BatchNorm statistics, 1 left as they were \(e\.g\. '.+': its input is the model input '.+' \(no BatchNorm before it\)\)$/m,
    );
    const a = loadModelFileSync(plain);
    const b = loadModelFileSync(corrected);
    expect(b.meta).toMatchObject({ biasCorrection: 'analytic' });
    expectOtherIntegerOutputs(a.model as GraphModule, b.model as GraphModule);
    const both = await runQuantize(onnx, calib, join(dir, 'both.qtk'), {
      'analytic-bias-correction': true,
      'bias-correction': true,
    });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--bias-correction and --analytic-bias-correction are two forms of one correction');
  });

  it('--adaround learns the weight rounding: a step per layer on stderr, the summary line, the model file', async () => {
    const out = join(dir, 'tiny-ada.qtk');
    const r = await runQuantize(tiny, calib, out, { adaround: true, 'adaround-iters': '20' });
    expect(
      r.stderr
        .split('\n')
        .filter((l) => !l.includes('adaround'))
        .join('\n'),
    ).toBe('');
    expect(r.code).toBe(0);
    // not a terminal: one line per progress step, every layer from step 0 to 20
    const steps = r.stderr.trim().split('\n');
    expect(steps[0]).toMatch(/^\[1\/\d+\] adaround \S+: step 0\/20$/);
    expect(steps.at(-1)).toMatch(/^\[(\d+)\/\1\] adaround \S+: step 20\/20$/);
    const line =
      /^adaround: +(\d+) layer\(s\), (\d+) of (\d+) weights rounded the other way; layer output error (-?\d+) % /m.exec(
        r.stdout,
      );
    expect(line).not.toBeNull();
    expect(Number(line![2])).toBeLessThan(Number(line![3]));
    expect(Number(line![4])).toBeLessThanOrEqual(0);
    expect(r.stdout).toMatch(/^observer: .*; weight rounding learnt \(AdaRound\)$/m);
    expect(loadModelFileSync(out).meta).toMatchObject({ adaround: { iterations: 20 } });
    const bad = await runQuantize(tiny, calib, join(dir, 'tiny-ada-bad.qtk'), { 'adaround-iters': '20' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--adaround-iters needs --adaround');
  });

  it('--equalize runs cross-layer equalization first: the pairs in the summary and the model file', async () => {
    const out = join(dir, 'tiny-cle.qtk');
    const r = await runQuantize(tiny, calib, out, { equalize: true });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const line = /^equalized: +(\d+) conv\/linear pair\(s\) \(cross-layer equalization\)$/m.exec(r.stdout);
    expect(line).not.toBeNull();
    expect(loadModelFileSync(out).meta).toMatchObject({ equalizedPairs: Number(line![1]) });
  });

  it('warns when a small first batch decides the scales (the observers average 1 % per later batch)', async () => {
    const small = await runQuantize(tiny, calib, join(dir, 'b2.qtk'), { batch: '2' });
    expect(small.code).toBe(0);
    expect(small.stdout).toContain(
      "  - calibration: the observers move their ranges 1 % toward each later batch (averagingConstant 0.01, horizon_plugin_pytorch's default), so with batches of 2 sample(s) the first samples decide most of every scale; calibrate with a larger --batch",
    );
    // the 10 samples in one batch of 32: nothing to warn about
    const one = await runQuantize(tiny, calib, join(dir, 'b32.qtk'));
    expect(one.stdout).not.toContain('the first samples decide');
  });

  it('--std must be positive: 0, -1 and 0,-2 exit 2 naming the option', async () => {
    for (const std of ['0', '-1', '0.5,-2']) {
      const r = await runQuantize(tiny, calib, join(dir, 'std.qtk'), { std });
      expect([std, r.code]).toEqual([std, 2]);
      expect(r.stderr).toContain('--std must be positive');
    }
  });

  it('rejects wrong input shapes, missing options and missing directories clearly', async () => {
    const wrong = join(dir, 'wrong');
    mkdirSync(wrong);
    writeFileSync(join(wrong, 'x.npy'), npyBytes([1, 32, 32], new Float32Array(32 * 32)));
    const out = join(dir, 'never.qtk');
    const shape = await runQuantize(tiny, wrong, out);
    expect(shape.code).toBe(1);
    expect(shape.stderr).toContain(
      `wrong input shape: ${join(wrong, 'x.npy')} has shape [1, 32, 32], but the model takes samples of shape [1, 28, 28]`,
    );

    const given = await run('quantize', tiny, '--calib', calib, '--out', out, '--input-shape', '1,3,28,28');
    expect(given.code).toBe(1);
    expect(given.stderr).toContain(
      "wrong input shape: --input-shape [1, 3, 28, 28] does not match the model's input [?, 1, 28, 28]",
    );

    const size = await runQuantize(tiny, calib, out, { size: '32x32' });
    expect(size.code).toBe(1);
    expect(size.stderr).toContain('wrong input shape: --size 32x32');

    const noCalib = await run('quantize', tiny, '--out', out);
    expect(noCalib.code).toBe(2);
    expect(noCalib.stderr).toContain('missing --calib DIR');

    const noDir = await runQuantize(tiny, join(dir, 'nope'), out);
    expect(noDir.code).toBe(1);
    expect(noDir.stderr).toBe(`qtk: error: calibration directory '${join(dir, 'nope')}' does not exist\n`);

    const observer = await runQuantize(tiny, calib, out, { observer: 'msee' });
    expect(observer.code).toBe(2);
    expect(observer.stderr).toContain("unknown observer 'msee' (registered: ");

    const labels = await run('eval', tiny, '--data', calib);
    expect(labels.code).toBe(1);
    expect(labels.stderr).toContain(`labels file '${join(calib, 'labels.txt')}' does not exist`);

    const evalShape = await run('eval', tiny, '--data', wrong, '--labels', join(evalDir, 'labels.txt'));
    expect(evalShape.code).toBe(1);
    expect(evalShape.stderr).toContain('wrong input shape');
    expect(() => readFileSync(out)).toThrow();
  });
});

// --engine: calibration in onnxruntime-node (the default from 16 samples) or in QTK, and what the summary and the
// model file say of it.
/** The integer outputs of a fixed-point model file on `x`. */
function integerOutputs(path: string, x: Tensor): Int32Array {
  const y = noGrad(() => (loadModelFileSync(path).model as unknown as { call(x: Tensor): unknown }).call(x));
  if (!(y instanceof QTensor)) throw new Error('expected a quantized output');
  return Int32Array.from(y.ints());
}

describe('qtk quantize --engine', () => {
  it('calibrates in onnxruntime-node by default, and its fixed-point model matches the one calibrated in QTK', async () => {
    const many = join(dir, 'calib24');
    mkdirSync(many);
    writeFileSync(join(many, 'batch.npy'), randomNpy([24, 1, 28, 28], new Generator(12)));
    const viaOrt = join(dir, 'ort.qtk');
    const viaQtk = join(dir, 'qtk.qtk');
    const a = await runQuantize(tiny, many, viaOrt, { batch: '8' });
    const b = await runQuantize(tiny, many, viaQtk, { batch: '8', engine: 'qtk' });
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout).toMatch(/^engine: {7}calibration in onnxruntime-node \d+\.\d+\.\d+$/m);
    expect(b.stdout).toMatch(/^engine: {7}calibration in qtk$/m);
    const fa = loadModelFileSync(viaOrt);
    expect((fa.meta.calibration as { engine: string }).engine).toMatch(/^onnxruntime-node /);
    // the same fixed-point model but where a scale's last bit flipped a rounding: at most one step, rarely
    const npy = parseNpy(readFileSync(join(many, 'batch.npy')));
    const x = new Tensor({ data: npy.data as Float32Array, shape: npy.shape, dtype: 'float32' });
    const ya = integerOutputs(viaOrt, x);
    const yb = integerOutputs(viaQtk, x);
    let differing = 0;
    ya.forEach((v, i) => {
      expect(Math.abs(v - yb[i]!)).toBeLessThanOrEqual(1);
      if (v !== yb[i]) differing++;
    });
    expect(differing).toBeLessThanOrEqual(ya.length / 100);
  });

  it('keeps a calibration of fewer than 16 samples in QTK under auto, where the set-up would not pay, and says so', async () => {
    const few = join(dir, 'few');
    mkdirSync(few);
    writeFileSync(join(few, 'batch.npy'), randomNpy([8, 1, 28, 28], new Generator(13)));
    const auto = await runQuantize(tiny, few, join(dir, 'few-auto.qtk'));
    expect(auto.stdout).toMatch(
      /^engine: {7}calibration in qtk \(8 sample\(s\): onnxruntime-node pays for its set-up from 16\)$/m,
    );
    const ort = await runQuantize(tiny, few, join(dir, 'few-ort.qtk'), { engine: 'ort' });
    expect(ort.stdout).toMatch(/^engine: {7}calibration in onnxruntime-node /m);
  });

  it('refuses an engine it does not know, naming the choices', async () => {
    const r = await runQuantize(tiny, calib, join(dir, 'engine-x.qtk'), { engine: 'tvm' });
    expect([r.code, r.stderr]).toEqual([
      2,
      expect.stringContaining("--engine must be one of auto, ort, qtk, got 'tvm'"),
    ]);
  });
});
