// Test fixtures: tiny ONNX models, .npy and PNG files in a temporary directory.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import {
  AvgPool2d,
  Conv2d,
  DeQuantStub,
  Flatten,
  LeakyReLU,
  Linear,
  MaxPool2d,
  Module,
  QuantStub,
  ReLU,
  Softmax,
} from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { argmax, Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { PNG } from 'pngjs';
import { bufferIo } from '../io.js';
import { main } from '../main.js';
import { TEST_CLI_BIN } from './test-cli-bundle.js';

/** How many samples a model classifies as `labels` says (argmax of its scores, dequantized when fixed-point). */
export function correctCount(model: GraphModule, x: Tensor, labels: ArrayLike<number>): number {
  const y = noGrad(() => model.call(x)) as Tensor | QTensor;
  const pred = argmax(y instanceof QTensor ? y.dequantize() : y, 1).values();
  let c = 0;
  for (let i = 0; i < pred.length; i++) if (pred[i] === labels[i]) c++;
  return c;
}

/**
 * The layers TinyNet, TwoOutputs and TwoTowers share: conv(1→4, 3×3, padding 1), ReLU, avg pool 2, flatten and a linear(→10)
 * over the pooled [4, side/2, side/2] features of a [N, 1, side, side] input, drawn from `g` in that order.
 */
export abstract class ConvPoolLinear extends Module {
  readonly conv: Conv2d;
  readonly relu = new ReLU();
  readonly pool = new AvgPool2d(2);
  readonly flat = new Flatten();
  readonly fc: Linear;
  constructor(g: Generator, side: number) {
    super();
    this.conv = new Conv2d(1, 4, 3, { padding: 1, generator: g });
    this.fc = new Linear(4 * (side / 2) ** 2, 10, { generator: g });
  }
}

/** conv(1→4, 3×3) → ReLU → avg pool 2 → flatten → linear(→10): every op on both marches. */
export class TinyNet extends ConvPoolLinear {
  constructor(g: Generator) {
    super(g, 28);
  }
  forward(x: Tensor): Tensor {
    return this.fc.call(this.flat.call(this.pool.call(this.relu.call(this.conv.call(x)))));
  }
}

/** LeakyReLU, abs and Softmax: three nodes bernoulli2 cannot convert. */
export class BadForBernoulli2 extends Module {
  readonly conv: Conv2d;
  readonly lrelu = new LeakyReLU();
  readonly flat = new Flatten();
  readonly fc: Linear;
  readonly sm = new Softmax({ dim: 1 });
  constructor(g: Generator) {
    super();
    this.conv = new Conv2d(1, 2, 3, { stride: 2, generator: g });
    this.fc = new Linear(2 * 13 * 13, 10, { generator: g });
  }
  forward(x: Tensor): Tensor {
    return this.sm.call(this.fc.call(this.flat.call(this.lrelu.call(this.conv.call(x)).abs())));
  }
}

/**
 * quantize → max pool 2 → ReLU → flatten → dequantize on [N, 10, 2, 2]: ten class scores per sample,
 * every module of it with an integer ONNX export rule.
 */
export class PoolScores extends Module {
  readonly quant = new QuantStub();
  readonly pool = new MaxPool2d(2);
  readonly relu = new ReLU();
  readonly flat = new Flatten();
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.flat.call(this.relu.call(this.pool.call(this.quant.call(x)))));
  }
}

/**
 * Two outputs of ranks 4 and 2, as a detection or segmentation model has: the feature map conv(1→4, 3×3) → ReLU
 * [N, 4, 8, 8], and scores avg pool 2 → flatten → linear(→10) [N, 10], on [N, 1, 8, 8].
 */
export class TwoOutputs extends ConvPoolLinear {
  constructor(g: Generator) {
    super(g, 8);
  }
  forward(x: Tensor): Tensor[] {
    const features = this.relu.call(this.conv.call(x));
    return [features, this.fc.call(this.flat.call(this.pool.call(features)))];
  }
}

/** TwoOutputs with its feature map times 1.1 and its scores negated: a known distance from TwoOutputs. */
export class TwoOutputsOff extends TwoOutputs {
  override forward(x: Tensor): Tensor[] {
    const [features, scores] = super.forward(x) as [Tensor, Tensor];
    return [features.mul(1.1), scores.neg()];
  }
}

/** Exports a model taking [N, 1, 8, 8] with two outputs named 'features/map' and 'scores'. */
export function writeTwoOutputsOnnx(path: string, model: Module): string {
  writeFileSync(
    path,
    exportOnnxBytes(symbolicTrace(model), [rand([2, 1, 8, 8], { generator: new Generator(1) })], {
      outputNames: ['features/map', 'scores'],
    }),
  );
  return path;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'qtk-cli-'));
}

/** Exports a model taking [N, 1, 28, 28] to an ONNX file. */
export function writeOnnx(path: string, model: Module): string {
  writeFileSync(path, exportOnnxBytes(symbolicTrace(model), [rand([2, 1, 28, 28], { generator: new Generator(1) })]));
  return path;
}

/** A .npy file of `shape`'s uniform samples in [-1, 1) drawn from `g`. */
export function randomNpy(shape: readonly number[], g: Generator): Uint8Array {
  return npyBytes(shape, rand(shape, { low: -1, high: 1, generator: g }).values() as Float32Array);
}

/** Makes `dir`/calib holding one batch.npy of `shape`'s uniform samples in [-1, 1) from `g`; returns the folder. */
export function writeCalibBatch(dir: string, shape: readonly number[], g: Generator): string {
  const calib = join(dir, 'calib');
  mkdirSync(calib);
  writeFileSync(join(calib, 'batch.npy'), randomNpy(shape, g));
  return calib;
}

/** A little-endian float32 .npy file. */
export function npyBytes(shape: readonly number[], data: Float32Array): Uint8Array {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  header += `${' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64)}\n`;
  const out = new Uint8Array(10 + header.length + data.byteLength);
  out.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0]);
  new DataView(out.buffer).setUint16(8, header.length, true);
  out.set(new TextEncoder().encode(header), 10);
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 10 + header.length);
  return out;
}

/** A PNG from RGBA pixels. */
export function pngBytes(width: number, height: number, rgba: Uint8Array): Uint8Array {
  const png = new PNG({ width, height });
  png.data = Buffer.from(rgba);
  return PNG.sync.write(png);
}

/** Runs qtk in-process. */
export async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = bufferIo();
  const code = await main(argv, io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

/** Command-line options from a record, in its order: `{ march: 'bayes', hybrid: true }` → `--march bayes --hybrid`. */
export function cliOptions(options: Readonly<Record<string, string | true>>): string[] {
  return Object.entries(options).flatMap(([name, value]) => (value === true ? [`--${name}`] : [`--${name}`, value]));
}

/** Runs `qtk quantize MODEL --calib DIR --out FILE` in-process, with more options. */
export function runQuantize(
  model: string,
  calib: string,
  out: string,
  options: Readonly<Record<string, string | true>> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return run('quantize', model, '--calib', calib, '--out', out, ...cliOptions(options));
}

/** Quantizes `model` into `out` as runQuantize does, for a test's set-up: throws qtk's message when it fails. */
export async function quantizeForSetup(
  model: string,
  calib: string,
  out: string,
  options: Readonly<Record<string, string | true>> = {},
): Promise<string> {
  const q = await runQuantize(model, calib, out, options);
  if (q.code !== 0) throw new Error(q.stderr);
  return out;
}

export const CLI_DIR = join(__dirname, '../..');

/** Runs qtk as a separate process, as a user would: the bin bundled from the sources (test-cli-bundle.ts). */
export function runProcess(...argv: string[]): { code: number | null; stdout: string; stderr: string } {
  return spawnQtk([TEST_CLI_BIN], argv);
}

/** Runs qtk as a separate process from the TypeScript sources through tsx: for runs that load a plugin module. */
export function runSourceProcess(...argv: string[]): { code: number | null; stdout: string; stderr: string } {
  return spawnQtk(['--conditions=qtk-source', '--import', 'tsx', join(CLI_DIR, 'src/bin.ts')], argv);
}

function spawnQtk(bin: readonly string[], argv: readonly string[]) {
  const r = spawnSync(process.execPath, [...bin, ...argv], { cwd: CLI_DIR, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
