// A float model with two inputs, as a two-tower model or a detection head fed several tensors has them, and the
// data folders qtk reads for it (one sub-folder or one .npy batch per input).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { symbolicTrace } from '@qtk/ir';
import { Linear } from '@qtk/nn';
import { exportOnnxBytes } from '@qtk/onnx';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { ConvPoolLinear, npyBytes } from './fixtures.js';

/**
 * 'image' [N, 1, 8, 8] → conv(1→4, 3×3) → ReLU → avg pool 2 → flatten → linear(→10), plus 'meta' [N, 6] →
 * linear(→10): the sum of the two towers is the output 'scores' [N, 10]. Every op on both marches.
 */
export class TwoTowers extends ConvPoolLinear {
  readonly metaFc: Linear;
  constructor(g: Generator) {
    super(g, 8);
    this.metaFc = new Linear(6, 10, { generator: g });
  }
  forward(image: Tensor, meta: Tensor): Tensor {
    const a = this.fc.call(this.flat.call(this.pool.call(this.relu.call(this.conv.call(image)))));
    return a.add(this.metaFc.call(meta));
  }
}

export const TWO_TOWER_SHAPES = { image: [1, 8, 8], meta: [6] } as const;

/** Writes TwoTowers (seeded) as float ONNX with inputs 'image', 'meta' and output 'scores'. */
export function writeTwoTowersOnnx(path: string): string {
  const g = new Generator(3);
  const examples = [rand([2, 1, 8, 8], { generator: g }), rand([2, 6], { generator: g })];
  writeFileSync(
    path,
    exportOnnxBytes(symbolicTrace(new TwoTowers(new Generator(7))), examples, {
      inputNames: ['image', 'meta'],
      outputNames: ['scores'],
    }),
  );
  return path;
}

/** `count` seeded samples in [-1, 1] of `shape`, as one tensor [count, ...shape]. */
export function seededSamples(shape: readonly number[], count: number, seed: number): Tensor {
  return rand([count, ...shape], { low: -1, high: 1, generator: new Generator(seed) });
}

/**
 * A data folder for TwoTowers: 'image' as one .npy per sample in DIR/image/ (s00.npy ...), 'meta' as one batch
 * DIR/meta.npy [count, 6]. Returns the folder and the samples written, per input.
 */
export function writeTwoTowerData(dir: string, count: number, seed: number): { image: Tensor; meta: Tensor } {
  const image = seededSamples(TWO_TOWER_SHAPES.image, count, seed);
  const meta = seededSamples(TWO_TOWER_SHAPES.meta, count, seed + 1000);
  mkdirSync(join(dir, 'image'), { recursive: true });
  const per = 64;
  const values = image.values() as Float32Array;
  for (let i = 0; i < count; i++)
    writeFileSync(
      join(dir, 'image', `s${String(i).padStart(2, '0')}.npy`),
      npyBytes(TWO_TOWER_SHAPES.image, values.slice(i * per, (i + 1) * per)),
    );
  writeFileSync(join(dir, 'meta.npy'), npyBytes([count, 6], meta.values() as Float32Array));
  return { image, meta };
}
