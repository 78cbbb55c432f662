// GFLOP/s of the cpu and wasm GEMM kernels on the shapes of the reference network's training step.
// Run: node --conditions=qtk-source --import tsx bench/gemm.ts [--quick] [--no-cpu] [--filter=text]
import {
  cpuGemm,
  gemmArgs,
  kernels,
  setWasmThreads,
  wasmStatus,
  type GemmArgs,
  type GemmKernel,
} from '../packages/tensor/src/index.js';

interface Shape {
  name: string;
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
}

// The reference network at batch 64 (28×28 → 14×14 → 7×7, 16/32/64 channels, 3×3 convs through
// im2col): forward W·cols, weight gradient dY·colsᵀ and input gradient Wᵀ·dY.
const SHAPES: Shape[] = [
  { name: 'stem fwd 1→16', transA: false, transB: false, m: 16, n: 64 * 784, k: 9 },
  { name: 'b1 fwd 16→16', transA: false, transB: false, m: 16, n: 64 * 784, k: 144 },
  { name: 'b1 dW', transA: false, transB: true, m: 16, n: 144, k: 64 * 784 },
  { name: 'b1 dX', transA: true, transB: false, m: 144, n: 64 * 784, k: 16 },
  { name: 'b2 fwd 16→32', transA: false, transB: false, m: 32, n: 64 * 196, k: 144 },
  { name: 'b2 fwd 32→32', transA: false, transB: false, m: 32, n: 64 * 196, k: 288 },
  { name: 'b2 dW', transA: false, transB: true, m: 32, n: 288, k: 64 * 196 },
  { name: 'b2 dX', transA: true, transB: false, m: 288, n: 64 * 196, k: 32 },
  { name: 'b3 fwd 64→64', transA: false, transB: false, m: 64, n: 64 * 49, k: 576 },
  { name: 'b3 dW', transA: false, transB: true, m: 64, n: 576, k: 64 * 49 },
  { name: 'b3 dX', transA: true, transB: false, m: 576, n: 64 * 49, k: 64 },
  { name: 'square 256·1024²', transA: false, transB: false, m: 256, n: 1024, k: 1024 },
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const noCpu = args.includes('--no-cpu');
const filter = args.find((a) => a.startsWith('--filter='))?.slice(9);

function operands(s: Shape): GemmArgs {
  const fill = (len: number) => {
    const x = new Float32Array(len);
    for (let i = 0; i < len; i++) x[i] = Math.sin(i * 0.37) * 0.5;
    return x;
  };
  return gemmArgs(s.transA, s.transB, s.m, s.n, s.k, fill(s.m * s.k), fill(s.k * s.n), new Float32Array(s.m * s.n));
}

/** Best-of-N seconds per call, each sample repeating the call for ≥ ~40 ms. */
function time(kernel: GemmKernel, g: GemmArgs, flops: number, guessGflops: number): number {
  kernel(g);
  const reps = Math.max(1, Math.round(0.04 / (flops / (guessGflops * 1e9))));
  let best = Infinity;
  for (let sample = 0; sample < (quick ? 2 : 5); sample++) {
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < reps; r++) kernel(g);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9 / reps);
  }
  return best;
}

const wasm = kernels.kernelOn<GemmKernel>('Gemm', 'wasm')?.fn;
let status = wasmStatus();
console.log(`wasm: ${status.loaded ? `loaded from ${status.source}` : `not loaded (${status.reason})`}`);
// Start the worker (it spawns on the first large gemm) and give it time to come up.
if (status.loaded && wasm) {
  wasm(operands(SHAPES[4]!));
  for (let i = 0; i < 100 && wasmStatus().threads !== 2; i++) await new Promise((r) => setTimeout(r, 20));
  status = wasmStatus();
  console.log(`wasm threads: ${status.threads}${status.threadsReason ? ` (${status.threadsReason})` : ''}`);
}
const twoThreads = status.threads === 2;

const col = (s: string | number, w: number) => String(s).padStart(w);
console.log(
  `${'shape'.padEnd(17)} ${col('m', 4)} ${col('n', 6)} ${col('k', 6)} ${col('cpu', 6)} ${col('wasm×1', 7)} ${col('wasm×2', 7)} ${col('×1/cpu', 7)} ${col('×2/×1', 6)}   GFLOP/s`,
);
for (const s of SHAPES) {
  if (filter && !s.name.includes(filter)) continue;
  const g = operands(s);
  const flops = 2 * s.m * s.n * s.k;
  const gf = (sec: number) => flops / sec / 1e9;
  const cpu = noCpu ? NaN : gf(time(cpuGemm, g, flops, 0.8));
  let one = NaN;
  let two = NaN;
  if (status.loaded && wasm) {
    setWasmThreads(false);
    one = gf(time(wasm, g, flops, 20));
    if (twoThreads) {
      setWasmThreads(true);
      two = gf(time(wasm, g, flops, 35));
    }
  }
  console.log(
    `${s.name.padEnd(17)} ${col(s.m, 4)} ${col(s.n, 6)} ${col(s.k, 6)} ${col(cpu.toFixed(2), 6)} ${col(one.toFixed(1), 7)} ${col(two.toFixed(1), 7)} ${col((one / cpu).toFixed(0), 7)} ${col((two / one).toFixed(2), 6)}`,
  );
}
setWasmThreads(true);
