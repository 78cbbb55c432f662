// The fuzz test's child process: imports each mutated model (and runs what imports) and prints one JSON
// line per case, `{"i":…,"start":true}` before and `{"i":…,"outcome":…}` after, so the parent can tell
// a hang or a crash from the case that caused it. Arguments: seed count first [corpusDir].
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BatchNorm2d, Conv2d, FloatFunctional, Flatten, Linear, MaxPool2d, Module, ReLU, Softmax } from '@qtk/nn';
import { Generator, QtkError, randn, type Tensor } from '@qtk/tensor';
import { symbolicTrace } from '@qtk/ir';
import { exportOnnxBytes } from '../export-onnx.js';
import { importOnnx } from '../import/import-onnx.js';
import { mutate, seededRandom } from './mutate.js';
import { corpusFileNames } from './run-fuzz.js';

class Plain extends Module {
  readonly conv = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(1) });
  readonly bn = new BatchNorm2d(4);
  readonly relu = new ReLU();
  readonly pool = new MaxPool2d(2);
  readonly flatten = new Flatten();
  readonly fc = new Linear(4 * 4 * 4, 5, { generator: new Generator(2) });
  readonly softmax = new Softmax({ dim: 1 });
  forward(x: Tensor): Tensor {
    return this.softmax.call(
      this.fc.call(this.flatten.call(this.pool.call(this.relu.call(this.bn.call(this.conv.call(x)))))),
    );
  }
}

class Residual extends Module {
  readonly a = new Conv2d(1, 4, 3, { padding: 1, generator: new Generator(3) });
  readonly b = new Conv2d(4, 4, 1, { generator: new Generator(4) });
  readonly add = new FloatFunctional();
  readonly cat = new FloatFunctional();
  forward(x: Tensor): Tensor {
    const y = this.a.call(x).relu();
    return this.cat.cat([this.add.add(this.b.call(y), y), y.mul(0.5)], 1).mean([2, 3]);
  }
}

const INPUT = [2, 1, 8, 8];

/** The real models the mutations start from: an exported CNN classifier and a residual block. */
export function baseModels(): Uint8Array[] {
  const x = randn(INPUT, { generator: new Generator(9) });
  return [new Plain().eval(), new Residual().eval()].map((m) => exportOnnxBytes(symbolicTrace(m), [x]));
}

export type Outcome = 'imported' | 'typed' | 'generic';

/** Imports `bytes` and, when that works, runs the model once on a small input. */
export function tryModel(bytes: Uint8Array): { outcome: Outcome; error?: string } {
  try {
    const gm = importOnnx(bytes);
    try {
      (gm as unknown as { call(x: Tensor): unknown }).call(randn(INPUT, { generator: new Generator(5) }));
    } catch (e) {
      if (!QtkError.isInstance(e))
        return { outcome: 'generic', error: `run: ${(e as Error)?.name}: ${(e as Error)?.message}`.slice(0, 300) };
    }
    return { outcome: 'imported' };
  } catch (e) {
    if (QtkError.isInstance(e)) return { outcome: 'typed' };
    return { outcome: 'generic', error: `${(e as Error)?.name}: ${(e as Error)?.message}`.slice(0, 300) };
  }
}

function main(): void {
  const [seed, count, first, corpusDir] = [
    Number(process.argv[2]),
    Number(process.argv[3]),
    Number(process.argv[4] ?? 0),
    process.argv[5],
  ];
  const corpus = corpusDir ? corpusFileNames(corpusDir).map((f) => readFileSync(join(corpusDir, f))) : [];
  const bases = baseModels();
  const write = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
  for (let i = first; i < corpus.length + count; i++) {
    write({ i, start: true });
    const t0 = performance.now();
    const bytes =
      i < corpus.length ? corpus[i]! : mutate(bases[i % bases.length]!, seededRandom(seed * 1_000_003 + i)).bytes;
    const r = tryModel(bytes);
    write({ i, ...r, ms: Math.round(performance.now() - t0) });
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) main();
