// qtk run (every output of every sample as .npy) and qtk eval --reference (per-output SQNR, cosine, max abs error,
// top-1 agreement against a float model) on a model with two outputs of ranks 4 and 2, through the real process.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import '@qtk/march-bayes';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { saveModelFileSync } from '@qtk/core/node';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import type { QTensor } from '@qtk/fixed-point';
import { symbolicTrace } from '@qtk/ir';
import { Flatten, MaxPool2d, Module, parseNpy, QuantStub, ReLU } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  npyBytes,
  pngBytes,
  run,
  runProcess,
  tempDir,
  TwoOutputs,
  TwoOutputsOff,
  writeTwoOutputsOnnx,
} from './testing/fixtures.js';

const N = 5;
let dir: string;
let data: string;
let reference: string;
let off: string;
let inputs: Float32Array;
/** TwoOutputs' own outputs on the samples, computed by the nn module (not through ONNX). */
let features: Float32Array;
let scores: Float32Array;

beforeAll(() => {
  dir = tempDir();
  inputs = rand([N, 1, 8, 8], { low: -1, high: 1, generator: new Generator(2) }).values() as Float32Array;
  data = join(dir, 'data');
  mkdirSync(data);
  // one sample alone, and a batch of four in one file
  writeFileSync(join(data, 'a.npy'), npyBytes([1, 8, 8], inputs.slice(0, 64)));
  writeFileSync(join(data, 'b.npy'), npyBytes([4, 1, 8, 8], inputs.slice(64)));
  const net = new TwoOutputs(new Generator(3));
  reference = writeTwoOutputsOnnx(join(dir, 'two.onnx'), net);
  off = writeTwoOutputsOnnx(join(dir, 'two-off.onnx'), new TwoOutputsOff(new Generator(3)));
  net.eval();
  const [f, s] = noGrad(() => net.call(rand([N, 1, 8, 8], { low: -1, high: 1, generator: new Generator(2) }))) as [
    Tensor,
    Tensor,
  ];
  features = f.values() as Float32Array;
  scores = s.values() as Float32Array;
});

function readNpy(path: string): { shape: number[]; data: Float32Array } {
  const a = parseNpy(readFileSync(path));
  return { shape: a.shape, data: a.data as Float32Array };
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe('qtk run', () => {
  it.each(['qtk', 'ort'])(
    'writes <sample>.<output>.npy for every sample and output (--engine %s), the values of the model',
    (runtime) => {
      const out = join(dir, `out-${runtime}`);
      const r = runProcess('run', reference, '--data', data, '--out', out, '--batch', '2', '--engine', runtime);
      expect(r.stderr).toBe('[1/3] 2/5 samples\n[2/3] 4/5 samples\n[3/3] 5/5 samples\n');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain("outputs:   'features/map' [4, 8, 8] -> <sample>.features_map.npy\n");
      expect(r.stdout).toContain("           'scores' [10] -> <sample>.scores.npy\n");
      expect(r.stdout).toContain(`written:   10 file(s) in ${out}\n`);
      const samples = ['a', 'b-0', 'b-1', 'b-2', 'b-3'];
      expect(readdirSync(out).sort()).toEqual(samples.flatMap((s) => [`${s}.features_map.npy`, `${s}.scores.npy`]));
      samples.forEach((s, i) => {
        const f = readNpy(join(out, `${s}.features_map.npy`));
        expect(f.shape).toEqual([4, 8, 8]);
        expect(maxAbsDiff(f.data, features.subarray(i * 256, (i + 1) * 256))).toBeLessThan(1e-5);
        const y = readNpy(join(out, `${s}.scores.npy`));
        expect(y.shape).toEqual([10]);
        expect(maxAbsDiff(y.data, scores.subarray(i * 10, (i + 1) * 10))).toBeLessThan(1e-5);
      });
    },
  );

  it('refuses a non-empty --out folder unless --force, and never writes there first', async () => {
    const out = join(dir, 'busy');
    mkdirSync(out);
    writeFileSync(join(out, 'keep.txt'), 'mine');
    const r = await run('run', reference, '--data', data, '--out', out);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `qtk: error: --out '${out}' is not empty (1 entries): choose an empty or new folder, or pass --force to write into it\n`,
    );
    expect(readdirSync(out)).toEqual(['keep.txt']);
    const forced = await run('run', reference, '--data', data, '--out', out, '--force', '--limit', '1');
    expect(forced.code).toBe(0);
    expect(readdirSync(out).sort()).toEqual(['a.features_map.npy', 'a.scores.npy', 'keep.txt']);
  });

  it('refuses two samples of one name, whose outputs would overwrite each other', async () => {
    const clash = join(dir, 'clash');
    mkdirSync(clash);
    writeFileSync(join(clash, 'x.npy'), npyBytes([1, 8, 8], inputs.slice(0, 64)));
    writeFileSync(join(clash, 'x.png'), pngBytes(8, 8, new Uint8Array(256).fill(200)));
    const r = await run('run', reference, '--data', clash, '--out', join(dir, 'clash-out'));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("qtk: error: two samples are both named 'x'");
  });

  it('needs --data and --out (usage errors)', async () => {
    expect((await run('run', reference, '--out', join(dir, 'o'))).stderr).toBe(
      "qtk: error: missing --data DIR (the inputs)\nrun 'qtk run --help' for the options\n",
    );
    const r = await run('run', reference, '--data', data);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "qtk: error: missing --out DIR (the folder for the outputs)\nrun 'qtk run --help' for the options\n",
    );
  });
});

describe('qtk eval --reference', () => {
  it('reports each output of a two-output model against the float model: SQNR, cosine, max abs error, top-1', () => {
    const r = runProcess('eval', off, '--data', data, '--reference', reference, '--json', '--batch', '2');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { samples: number; outputs: Record<string, unknown>[] };
    expect(j.samples).toBe(N);
    const [f, s] = j.outputs as [Record<string, number>, Record<string, number>];
    // the feature map is 1.1 times the reference's: the error is 0.1 · ref, SQNR −20·log10(0.1) = 20 dB
    expect(f.name).toBe('features/map');
    expect(f.shape).toEqual([4, 8, 8]);
    expect(f.sqnrDb).toBeCloseTo(20, 4);
    expect(f.cosine).toBeCloseTo(1, 6);
    expect(f.maxAbsError).toBeCloseTo(0.1 * Math.max(...features), 5);
    expect(f.referenceMaxAbs).toBeCloseTo(Math.max(...features), 5);
    expect(f.top1Agreement).toBeUndefined(); // rank 4: not class scores
    // the scores are negated: the error is −2 · ref (−6.02 dB), cosine −1, the arg-max is the reference's arg-min
    expect(s.sqnrDb).toBeCloseTo(-20 * Math.log10(2), 4);
    expect(s.cosine).toBeCloseTo(-1, 6);
    expect(s.maxAbsError).toBeCloseTo(2 * Math.max(...scores.map(Math.abs)), 5);
    expect(s.top1Agreement).toBe(0);
  });

  it('prints a table; the model against itself is identical, with full top-1 agreement', () => {
    const r = runProcess('eval', reference, '--data', data, '--reference', reference, '--engine', 'ort');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      [
        'output        shape      SQNR dB          cosine    max abs err  top-1 agree',
        '------------  ---------  ---------------  --------  -----------  -----------',
        'features/map  [4, 8, 8]  inf (identical)  1.000000  0.000        -',
        'scores        [10]       inf (identical)  1.000000  0.000        100.00%',
      ].join('\n'),
    );
  });

  it('--reference-runtime qtk imports the reference instead (the same figures); it needs --reference and ort|qtk', async () => {
    const r = await run('eval', off, '--data', data, '--reference', reference, '--reference-runtime', 'qtk', '--json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout) as { reference: { runtime: string }; outputs: Record<string, number>[] };
    expect(j.reference.runtime).toBe('qtk');
    expect(j.outputs[0]!.sqnrDb).toBeCloseTo(20, 4);
    expect(j.outputs[1]!.sqnrDb).toBeCloseTo(-20 * Math.log10(2), 4);
    const alone = await run('eval', off, '--data', data, '--reference-runtime', 'qtk');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--reference-runtime goes with --reference FLOAT.onnx');
    const bad = await run('eval', off, '--data', data, '--reference', reference, '--reference-runtime', 'tvm');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--reference-runtime must be ort or qtk, got 'tvm'");
  });

  it('refuses a reference with another number of outputs, naming both', async () => {
    class FeaturesOnly extends Module {
      readonly conv = new TwoOutputs(new Generator(3)).conv;
      forward(x: Tensor): Tensor {
        return this.conv.call(x);
      }
    }
    const one = join(dir, 'one.onnx');
    writeFileSync(one, exportOnnxBytes(symbolicTrace(new FeaturesOnly()), [rand([2, 1, 8, 8])]));
    const r = await run('eval', reference, '--data', data, '--reference', one);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `qtk: error: ${reference} has 2 output(s) ('features/map', 'scores') and the reference ${one} 1 ('output')`,
    );
  });

  it('keeps --json and --labels apart from the accuracy report (usage errors)', async () => {
    const j = await run('eval', reference, '--data', data, '--json');
    expect(j.code).toBe(2);
    expect(j.stderr).toContain('--json goes with --reference');
    const l = await run('eval', reference, '--data', data, '--reference', reference, '--labels', 'x.txt');
    expect(l.code).toBe(2);
    expect(l.stderr).toContain('--labels has no use with --reference');
  });
});

/** quantize → max pool 2 → ReLU → flatten on [N, 10, 2, 2], no dequantize: the fixed-point output is integers. */
class IntegerScores extends Module {
  readonly quant = new QuantStub();
  readonly pool = new MaxPool2d(2);
  readonly relu = new ReLU();
  readonly flat = new Flatten();
  forward(x: Tensor): Tensor {
    return this.flat.call(this.relu.call(this.pool.call(this.quant.call(x))));
  }
}

describe('qtk run on a fixed-point model and its integer ONNX export', () => {
  it('writes the dequantized outputs, the same from the QTK model file and from onnxruntime', async () => {
    const g = new Generator(5);
    const prepared = prepareQatFx(new IntegerScores(), { global: getDefaultQatQconfig() }, { march: 'bayes' });
    calibrate(prepared, [rand([16, 10, 2, 2], { low: -1, high: 1, generator: g })]);
    const fixed = convertFx(prepared, { march: 'bayes' });
    const model = join(dir, 'int.qtk');
    saveModelFileSync(fixed, model, { meta: { inputShape: [null, 10, 2, 2] } });
    const x = rand([3, 10, 2, 2], { low: -1, high: 1, generator: g });
    const expected = (noGrad(() => fixed.call(x)) as QTensor).dequantize().values() as Float32Array;
    const xs = join(dir, 'int-data');
    mkdirSync(xs);
    writeFileSync(join(xs, 'x.npy'), npyBytes([3, 10, 2, 2], x.values() as Float32Array));
    const onnx = join(dir, 'int.onnx');
    expect((await run('export', model, '--out', onnx)).code).toBe(0);
    for (const [what, path] of [
      ['qtk', model],
      ['ort', onnx],
    ] as const) {
      const out = join(dir, `int-out-${what}`);
      const r = await run('run', path, '--data', xs, '--out', out);
      expect(r.code).toBe(0);
      for (let i = 0; i < 3; i++) {
        const y = readNpy(join(out, `x-${i}.output.npy`));
        expect(y.shape).toEqual([10]);
        expect([...y.data]).toEqual([...expected.subarray(i * 10, (i + 1) * 10)]);
      }
    }
  });
});
