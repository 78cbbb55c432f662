// Milliseconds and GFLOP/s of the reference network's convolutions at batch 64 (forward, and
// backward with the gradients training needs), on the wasm kernels with one and two threads and,
// unless --no-cpu, on the cpu kernels (whole-batch im2col + GEMM).
// Run: node --conditions=qtk-source --import tsx bench/conv.ts [--no-cpu] [--reps=5]
import {
  Generator,
  kernels,
  randn,
  setWasmThreads,
  wasmStatus,
  type ConvAttrs,
  type ConvBackwardKernel,
  type Tensor,
  type TensorKernel,
} from '../packages/tensor/src/index.js';

interface Layer {
  name: string;
  x: number[];
  w: number[];
  stride: number;
  pad: number;
  /** How many convs of this shape one step runs. */
  count: number;
  /** The stem's input is data: no input gradient. */
  needInput: boolean;
}

const LAYERS: Layer[] = [
  { name: 'stem 1→16', x: [64, 1, 28, 28], w: [16, 1, 3, 3], stride: 1, pad: 1, count: 1, needInput: false },
  { name: 'b1 16→16', x: [64, 16, 28, 28], w: [16, 16, 3, 3], stride: 1, pad: 1, count: 2, needInput: true },
  { name: 'b2 16→32 s2', x: [64, 16, 28, 28], w: [32, 16, 3, 3], stride: 2, pad: 1, count: 1, needInput: true },
  { name: 'b2 32→32', x: [64, 32, 14, 14], w: [32, 32, 3, 3], stride: 1, pad: 1, count: 1, needInput: true },
  { name: 'b2 short 1×1 s2', x: [64, 16, 28, 28], w: [32, 16, 1, 1], stride: 2, pad: 0, count: 1, needInput: true },
  { name: 'b3 32→64 s2', x: [64, 32, 14, 14], w: [64, 32, 3, 3], stride: 2, pad: 1, count: 1, needInput: true },
  { name: 'b3 64→64', x: [64, 64, 7, 7], w: [64, 64, 3, 3], stride: 1, pad: 1, count: 1, needInput: true },
  { name: 'b3 short 1×1 s2', x: [64, 32, 14, 14], w: [64, 32, 1, 1], stride: 2, pad: 0, count: 1, needInput: true },
];

const args = process.argv.slice(2);
const noCpu = args.includes('--no-cpu');
const reps = Number(args.find((a) => a.startsWith('--reps='))?.slice(7) ?? 5);

/** Best of `reps` timings in ms. */
function best(f: () => void): number {
  f();
  let ms = Infinity;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    ms = Math.min(ms, performance.now() - t0);
  }
  return ms;
}

const gen = new Generator(0);
const fwd = (backend: string) => kernels.kernelOn<TensorKernel<ConvAttrs>>('Conv', backend)!.fn;
const bwd = (backend: string) => kernels.kernelOn<ConvBackwardKernel>('ConvBackward', backend)!.fn;

// Start the worker (it spawns on the first large job) and give it time to come up.
const warm = LAYERS[1]!;
const attrsOf = (l: Layer): ConvAttrs => ({
  stride: [l.stride, l.stride],
  pads: [l.pad, l.pad, l.pad, l.pad],
  dilation: [1, 1],
  groups: 1,
});
fwd('wasm')([randn(warm.x, { generator: gen }), randn(warm.w, { generator: gen })], attrsOf(warm), {});
for (let i = 0; i < 100 && wasmStatus().threads !== 2; i++) await new Promise((r) => setTimeout(r, 20));
const status = wasmStatus();
console.log(
  `wasm: ${status.loaded ? status.source : status.reason}; threads ${status.threads}${status.threadsReason ? ` (${status.threadsReason})` : ''}`,
);

const configs: { label: string; backend: string; threads: boolean }[] = [
  { label: 'wasm×1', backend: 'wasm', threads: false },
  ...(status.threads === 2 ? [{ label: 'wasm×2', backend: 'wasm', threads: true }] : []),
  ...(noCpu ? [] : [{ label: 'cpu', backend: 'cpu', threads: false }]),
];

const col = (s: string | number, w: number) => String(s).padStart(w);
console.log(
  `${'layer'.padEnd(17)} ${'config'.padEnd(7)} ${col('fwd ms', 8)} ${col('GF/s', 5)} ${col('bwd ms', 8)} ${col('GF/s', 5)}`,
);
const totals = new Map<string, { fwd: number; bwd: number }>();
for (const l of LAYERS) {
  const x = randn(l.x, { generator: gen });
  const w = randn(l.w, { generator: gen });
  const attrs = attrsOf(l);
  const y = fwd('wasm')([x, w], attrs, {}) as Tensor;
  const gy = randn(y.shape, { generator: gen });
  const battrs = { ...attrs, needInput: l.needInput, needWeight: true, needBias: false };
  const flops = 2 * y.size * l.w[1]! * l.w[2]! * l.w[3]!;
  for (const c of configs) {
    setWasmThreads(c.threads);
    // The cpu kernels run on the TypeScript gemm, as with QTK_BACKEND=cpu.
    if (c.backend === 'cpu') kernels.setBackendEnabled('wasm', false);
    const f = best(() => fwd(c.backend)([x, w], attrs, {}));
    const b = best(() => bwd(c.backend)([x, w, gy], battrs, {}));
    kernels.setBackendEnabled('wasm', true);
    const t = totals.get(c.label) ?? { fwd: 0, bwd: 0 };
    totals.set(c.label, { fwd: t.fwd + l.count * f, bwd: t.bwd + l.count * b });
    const bflops = flops * (l.needInput ? 2 : 1);
    console.log(
      `${l.name.padEnd(17)} ${c.label.padEnd(7)} ${col(f.toFixed(2), 8)} ${col((flops / f / 1e6).toFixed(1), 5)} ${col(b.toFixed(2), 8)} ${col((bflops / b / 1e6).toFixed(1), 5)}`,
    );
  }
}
setWasmThreads(true);
for (const [label, t] of totals) {
  console.log(
    `per step ${label.padEnd(7)} forward ${t.fwd.toFixed(1)} ms, backward ${t.bwd.toFixed(1)} ms, total ${(t.fwd + t.bwd).toFixed(1)} ms`,
  );
}
