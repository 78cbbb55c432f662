import { channelParams, type RequantizeInt32Attrs } from '../ops/requantize-int32.js';
import { make } from '../ops/util.js';
import { registerKernel, type TensorKernel } from '../registry.js';
import { cpuKernel, type NoteFallback, orCpu } from './cpu-fallback.js';
import type { Tensor } from '../tensor.js';
import { align64, type Arena } from './wasm-arena.js';
import { MAX_WASM_BYTES } from './wasm-gemm.js';

// Host side of assembly/_requantize.ts: stages the int32 accumulator, the added input and the
// per-channel integers (bias, sumin m/n/k, plan pre/m/n, each broadcast to `channels` values),
// runs the epilogue on this thread and copies the int8/int16/int32 result out.

export interface RequantizeExports {
  requantizeInt32(
    acc: number,
    other: number,
    otherBytes: number,
    out: number,
    outBytes: number,
    outer: number,
    channels: number,
    inner: number,
    params: number,
    flags: number,
    lo: number,
    hi: number,
  ): void;
}

type IntArray = Int8Array | Int16Array | Int32Array;

export interface WasmRequantize {
  run(acc: Int32Array, other: IntArray | null, a: RequantizeInt32Attrs): IntArray;
}

const FLAG_SUMIN = 1;
const FLAG_PLAN = 2;
const FLAG_INT16 = 4;
const BYTES = { int8: 1, int16: 2, int32: 4 } as const;

/** Bytes of wasm memory one call stages. */
export function wasmRequantizeBytes(values: number, channels: number, otherBytes: number, outBytes: number): number {
  return values * (4 + otherBytes + outBytes) + 7 * channels * 4 + 4 * 64;
}

/** The 7 per-channel vectors the kernel reads, broadcast to `channels` values each. */
export function packParams(a: RequantizeInt32Attrs, dst: Int32Array, at: number): void {
  const C = a.channels;
  for (let c = 0; c < C; c++) {
    const p = channelParams(a, c);
    dst[at + c] = p.bias;
    dst[at + C + c] = p.sm;
    dst[at + 2 * C + c] = p.sn;
    dst[at + 3 * C + c] = p.sk;
    dst[at + 4 * C + c] = p.pre;
    dst[at + 5 * C + c] = p.m;
    dst[at + 6 * C + c] = p.n;
  }
}

export function epilogueFlags(a: RequantizeInt32Attrs): number {
  return (
    (a.sumin ? FLAG_SUMIN : 0) | (a.plan ? FLAG_PLAN : 0) | (a.plan?.rule === 'int16_intermediate' ? FLAG_INT16 : 0)
  );
}

export function createWasmRequantize(exports: RequantizeExports, arena: Arena): WasmRequantize {
  return {
    run(acc, other, a) {
      const len = acc.length;
      const eBytes = other ? other.BYTES_PER_ELEMENT : 1;
      const oBytes = BYTES[a.outDtype];
      let top = arena.base;
      const alloc = (bytes: number): number => {
        const at = top;
        top = align64(top + bytes);
        return at;
      };
      const accP = alloc(len * 4);
      const eP = alloc(other ? len * eBytes : 0);
      const outP = alloc(len * oBytes);
      const paramsP = alloc(7 * a.channels * 4);
      const buffer = arena.reserve(top - arena.base).buffer;
      new Int32Array(buffer, accP, len).set(acc);
      if (other) {
        const View = other.constructor as new (b: ArrayBufferLike, at: number, n: number) => IntArray;
        new View(buffer, eP, len).set(other);
      }
      packParams(a, new Int32Array(buffer), paramsP >>> 2);
      exports.requantizeInt32(
        accP,
        eP,
        eBytes,
        outP,
        oBytes,
        len / (a.channels * a.inner),
        a.channels,
        a.inner,
        paramsP,
        epilogueFlags(a),
        a.lo,
        a.hi,
      );
      const heap = arena.heap().buffer;
      if (a.outDtype === 'int8') return new Int8Array(heap, outP, len).slice();
      if (a.outDtype === 'int16') return new Int16Array(heap, outP, len).slice();
      return new Int32Array(heap, outP, len).slice();
    },
  };
}

/** The wasm RequantizeInt32 kernel; a failed memory.grow at run time falls back to the cpu kernel. */
export function registerWasmRequantizeKernel(requant: () => WasmRequantize | null, noteFallback: NoteFallback): void {
  registerKernel<TensorKernel<RequantizeInt32Attrs>>({
    op: 'RequantizeInt32',
    backend: 'wasm',
    accepts: (inputs: Tensor[], a: RequantizeInt32Attrs) =>
      requant() !== null &&
      wasmRequantizeBytes(
        inputs[0]!.size,
        a.channels,
        inputs[1] ? BYTES[inputs[1].dtype as keyof typeof BYTES] : 1,
        BYTES[a.outDtype],
      ) <= MAX_WASM_BYTES,
    fn: (inputs, a, saved) => {
      const [acc, other] = inputs;
      return orCpu(
        noteFallback,
        'RequantizeInt32',
        acc!.shape.join('×'),
        () => {
          const y = requant()!.run(acc!.values() as Int32Array, other ? (other.values() as IntArray) : null, a);
          return make(y, [...acc!.shape], a.outDtype);
        },
        () => cpuKernel<TensorKernel<RequantizeInt32Attrs>>('RequantizeInt32')(inputs, a, saved),
      );
    },
  });
}
