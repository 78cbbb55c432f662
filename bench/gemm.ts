// GFLOP/s of the cpu and wasm GEMM kernels on the shapes of the reference network's training step.
// Run: node --conditions=qtk-source --import tsx bench/gemm.ts [--quick] [--only=wasm|cpu] [--filter=text]
import { cpuGemm, gemmArgs, kernels, wasmStatus, type GemmArgs, type GemmKernel } from '../packages/tensor/src/index.js';

interface Shape {
  name: string;
  transA: boolean;
  transB: boolean;
  m: number;
  n: number;
  k: number;
}

// Batch 64 at 28×28 → 14×14 → 7×7; conv weights cout × cin·9; cols (cin·9) × (batch·spatial).
const SHAPES: Shape[] = [
  { name: 'conv1 fwd  W·cols', transA: false, transB: false, m: 16, n: 64 * 784, k: 9 },
  { name: 'conv2 fwd  W·cols', transA: false, transB: false, m: 32, n: 64 * 196, k: 144 },
  { name: 'conv3 fwd  W·cols', transA: false, transB: false, m: 64, n: 64 * 49, k: 288 },
  { name: 'conv3b fwd W·cols', transA: false, transB: false, m: 64, n: 64 * 49, k: 576 },
  { name: 'conv2 dW   dY·colsᵀ', transA: false, transB: true, m: 32, n: 144, k: 64 * 196 },
  { name: 'conv3 dW   dY·colsᵀ', transA: false, transB: true, m: 64, n: 288, k: 64 * 49 },
  { name: 'conv2 dX   Wᵀ·dY', transA: true, transB: false, m: 144, n: 64 * 196, k: 32 },
  { name: 'conv3 dX   Wᵀ·dY', transA: true, transB: false, m: 288, n: 64 * 49, k: 64 },
  { name: 'fc fwd     X·Wᵀ', transA: false, transB: true, m: 64, n: 128, k: 3136 },
  { name: 'square     1024³/4', transA: false, transB: false, m: 256, n: 1024, k: 1024 },
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.find((a) => a.startsWith('--only='))?.slice(7);
const filter = args.find((a) => a.startsWith('--filter='))?.slice(9);

function operands(s: Shape): GemmArgs {
  const fill = (len: number) => {
    const x = new Float32Array(len);
    for (let i = 0; i < len; i++) x[i] = Math.sin(i * 0.37) * 0.5;
    return x;
  };
  return gemmArgs(s.transA, s.transB, s.m, s.n, s.k, fill(s.m * s.k), fill(s.k * s.n), new Float32Array(s.m * s.n));
}

/** Best-of-N seconds per call, with the repetition count chosen so each sample takes ≥ ~50 ms. */
function time(kernel: GemmKernel, g: GemmArgs, flops: number, guessGflops: number): number {
  kernel(g);
  const reps = Math.max(1, Math.round(0.05 / (flops / (guessGflops * 1e9))));
  let best = Infinity;
  for (let sample = 0; sample < (quick ? 2 : 5); sample++) {
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < reps; r++) kernel(g);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9 / reps);
  }
  return best;
}

const status = wasmStatus();
console.log(`wasm: ${status.loaded ? `loaded from ${status.source}` : `not loaded (${status.reason})`}`);
const wasmKernel = kernels.kernelOn<GemmKernel>('Gemm', 'wasm')?.fn;
const header = `${'shape'.padEnd(22)} ${'m'.padStart(5)} ${'n'.padStart(6)} ${'k'.padStart(6)}  ${'cpu GF/s'.padStart(9)} ${'wasm GF/s'.padStart(10)} ${'speedup'.padStart(8)}  wasm ms`;
console.log(header);
for (const s of SHAPES) {
  if (filter && !s.name.includes(filter)) continue;
  const g = operands(s);
  const flops = 2 * s.m * s.n * s.k;
  const cpu = only === 'wasm' ? NaN : flops / time(cpuGemm, g, flops, 0.8) / 1e9;
  const wasmSec = only === 'cpu' || !status.loaded || !wasmKernel ? NaN : time(wasmKernel, g, flops, 15);
  const wasm = flops / wasmSec / 1e9;
  console.log(
    `${s.name.padEnd(22)} ${String(s.m).padStart(5)} ${String(s.n).padStart(6)} ${String(s.k).padStart(6)}  ` +
      `${cpu.toFixed(2).padStart(9)} ${wasm.toFixed(2).padStart(10)} ${(wasm / cpu).toFixed(1).padStart(8)}x  ${(wasmSec * 1e3).toFixed(2)}`,
  );
}
