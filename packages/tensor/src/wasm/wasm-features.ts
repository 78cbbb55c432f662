import { wasmApi } from './wasm-api.js';

// Relaxed SIMD (fused multiply-add) doubles the float GEMM's peak on hardware with FMA. It is on by
// default in current browsers and from Node 22; Node 20's V8 has it behind an experimental flag that
// can still be set before the first module using it compiles.

const V128_ZERO = [0xfd, 0x0c, ...new Array<number>(16).fill(0)];
const MADD_BODY = [0x00, ...V128_ZERO, ...V128_ZERO, ...V128_ZERO, 0xfd, 0x85, 0x02, 0x0b];
/** A module with one function returning f32x4.relaxed_madd(0, 0, 0). */
const RELAXED_PROBE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00,
  0x01,
  0x05,
  0x01,
  0x60,
  0x00,
  0x01,
  0x7b,
  0x03,
  0x02,
  0x01,
  0x00,
  0x0a,
  MADD_BODY.length + 2,
  0x01,
  MADD_BODY.length,
  ...MADD_BODY,
]);

type Validate = (bytes: Uint8Array) => boolean;
const validate = (globalThis as { WebAssembly?: { validate?: Validate } }).WebAssembly?.validate;

function enableNodeFlag(): void {
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const v8 = proc?.getBuiltinModule?.('node:v8') as { setFlagsFromString?: (flags: string) => void } | undefined;
  try {
    v8?.setFlagsFromString?.('--experimental-wasm-relaxed-simd');
  } catch {
    // an engine without the flag: the probe below stays false
  }
}

/**
 * Whether this runtime compiles relaxed SIMD, turning it on in Node 20 when needed. `QTK_WASM_RELAXED=0`
 * keeps the plain SIMD kernels (whose float sums round after every multiply, as the cpu kernels do).
 */
export function relaxedSimdSupport(env: Record<string, string | undefined> | undefined): {
  ok: boolean;
  reason: string;
} {
  if (env?.QTK_WASM_RELAXED === '0') return { ok: false, reason: 'disabled by QTK_WASM_RELAXED=0' };
  if (!wasmApi || !validate) return { ok: false, reason: 'no WebAssembly.validate' };
  if (validate(RELAXED_PROBE)) return { ok: true, reason: 'relaxed SIMD supported' };
  enableNodeFlag();
  if (validate(RELAXED_PROBE)) return { ok: true, reason: 'relaxed SIMD enabled (--experimental-wasm-relaxed-simd)' };
  return { ok: false, reason: 'this runtime does not compile relaxed SIMD' };
}
