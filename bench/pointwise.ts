// Milliseconds per call of the pointwise kernels (BatchNormalization forward and backward, Relu
// and its gradient, same-shape Add) on wasm and on cpu, at the reference network's batch-64 shapes
// and at small sizes (to place the wasm kernels' size threshold).
// Run: node --conditions=qtk-source --import tsx bench/pointwise.ts [--reps=20] [--small]
import {
  Generator,
  kernels,
  randn,
  wasmStatus,
  type BatchNormAttrs,
  type BatchNormBackwardAttrs,
  type BatchNormBackwardKernel,
  type BatchNormKernel,
  type ReluBackwardKernel,
  type Saved,
  type Tensor,
  type TensorKernel,
} from '../packages/tensor/src/index.js';

const args = process.argv.slice(2);
const reps = Number(args.find((a) => a.startsWith('--reps='))?.slice(7) ?? 20);
const shapes: number[][] = args.includes('--small')
  ? [
      [1, 4, 8, 8],
      [1, 16, 8, 8],
      [2, 16, 8, 8],
      [4, 16, 8, 8],
      [8, 16, 8, 8],
      [16, 16, 8, 8],
    ]
  : [
      [64, 16, 28, 28],
      [64, 32, 14, 14],
      [64, 64, 7, 7],
    ];

const gen = new Generator(1);

/** Median milliseconds of `reps` calls after warm-up. */
function time(f: () => unknown): number {
  for (let i = 0; i < 3; i++) f();
  const t: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return t[Math.floor(t.length / 2)]!;
}

function on<F>(op: string, backend: string): F {
  const spec = kernels.kernelOn<F>(op, backend);
  if (!spec) throw new Error(`no ${backend} kernel for ${op}`);
  return spec.fn;
}

console.log('shape              op                          cpu ms   wasm ms   ratio');
for (const shape of shapes) {
  const c = shape[1]!;
  const x = randn(shape, { generator: gen });
  const g = randn(shape, { generator: gen });
  const w = randn([c], { generator: gen });
  const b = randn([c], { generator: gen });
  const attrs: BatchNormAttrs = { training: true, eps: 1e-5, hasWeight: true, hasBias: true };
  const battrs: BatchNormBackwardAttrs = { ...attrs, needInput: true, needWeight: true, needBias: true };
  const saved: Saved = {};
  on<BatchNormKernel>('BatchNormalization', 'cpu')([x, w, b], attrs, saved);
  const y = on<TensorKernel>('Relu', 'cpu')([x], {}, {}) as Tensor;
  const cases: [string, (backend: string) => unknown][] = [
    ['BatchNormalization', (be) => on<BatchNormKernel>('BatchNormalization', be)([x, w, b], attrs, {})],
    [
      'BatchNormalizationBackward',
      (be) => on<BatchNormBackwardKernel>('BatchNormalizationBackward', be)([x, g, w], battrs, saved),
    ],
    ['Relu', (be) => on<TensorKernel>('Relu', be)([x], {}, {})],
    ['ReluBackward', (be) => on<ReluBackwardKernel>('ReluBackward', be)([y, g], {})],
    ['Add', (be) => on<TensorKernel>('Add', be)([x, g], {}, {})],
  ];
  for (const [op, run] of cases) {
    const cpu = time(() => run('cpu'));
    const wasm = time(() => run('wasm'));
    console.log(
      `${shape.join('×').padEnd(18)} ${op.padEnd(26)} ${cpu.toFixed(3).padStart(8)} ${wasm.toFixed(3).padStart(9)} ${(cpu / wasm).toFixed(2).padStart(7)}`,
    );
  }
}
console.log(`wasm: ${JSON.stringify(wasmStatus())}`);
