// Conv2d backward on two wasm threads against one thread, repeated while two busy loops load the
// machine (so the threads' timing shifts as it does on a busy CI host). Exits 1 on any mismatch.
// Run: node --conditions=qtk-source --import tsx bench/conv-threads-stress.ts [iterations]
import { spawn } from 'node:child_process';
import { Conv2d } from '@qtk/nn';
import { Generator, loadWasmBackend, randn, setWasmThreads, wasmStatus } from '@qtk/tensor';

loadWasmBackend();
const iterations = Number(process.argv[2] ?? 40);
const burners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));

function gradients(k: number, hw: number): { dw: Float32Array; dx: Float32Array } {
  const conv = new Conv2d(32, 64, k, { padding: k >> 1, bias: false, generator: new Generator(1) });
  const x = randn([64, 32, hw, hw], { generator: new Generator(2) });
  x.requiresGrad = true;
  const y = conv.call(x);
  y.mul(randn(y.shape, { generator: new Generator(5) }))
    .sum()
    .backward();
  return { dw: Float32Array.from(conv.weight.grad!.values()), dx: Float32Array.from(x.grad!.values()) };
}

const differs = (a: Float32Array, b: Float32Array) =>
  a.some((v, i) => Math.abs(v - b[i]!) > 1e-3 * (1 + Math.abs(b[i]!)));

let bad = 0;
try {
  for (const [k, hw] of [
    [3, 7],
    [1, 14],
  ] as const) {
    setWasmThreads(false);
    const ref = gradients(k, hw);
    setWasmThreads(true);
    let wrong = 0;
    for (let i = 0; i < iterations; i++) {
      const g = gradients(k, hw);
      if (differs(g.dw, ref.dw) || differs(g.dx, ref.dx)) wrong++;
    }
    console.log(
      `conv ${k}x${k} 32->64 on ${hw}x${hw}, batch 64: ${wrong} of ${iterations} two-thread backward passes differ from one thread (worker chunks so far ${wasmStatus().workerChunks ?? 0})`,
    );
    bad += wrong;
  }
} finally {
  for (const b of burners) b.kill();
}
process.exit(bad ? 1 : 0);
