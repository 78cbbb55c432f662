// AdaRound's view of a conv or linear layer: its output at sampled positions as patches times weights. A conv's
// output channel o at one position is the dot product of o's kernel with the input patch under it, so a sample
// of positions turns the layer into one small matrix product per group, [G, M, J] × [G, J, cout/G], whatever
// the image size: the rounding is learnt on those instead of on whole convolutions.
import { Conv1d, Conv2d, Conv3d, Linear } from '@qtk/nn';
import { type Generator, Tensor } from '@qtk/tensor';

/** The patches of `rows` sampled positions and the float layer's output there (bias left out). */
export interface PatchPool {
  /** [groups, rows, J]: J = in/groups · kernel volume. */
  readonly patches: Tensor;
  /** [groups, rows, out/groups]: the float weights' products. */
  readonly targets: Tensor;
  readonly groups: number;
}

/** At most this many floats of patches (128 MB) per layer. */
const POOL_FLOATS = 32 * 1024 * 1024;

type ConvLayer = Conv1d | Conv2d | Conv3d;

/** Per spatial dim (3-d, leading dims of 1): kernel, stride, dilation, pad before; from the layer and the sizes. */
function convDims(layer: ConvLayer, image: readonly number[], out: readonly number[]) {
  const lead = 3 - layer.kernelSize.length;
  const pad = (d: number): number => {
    if (layer.padding === 'valid') return 0;
    const k = layer.kernelSize[d]!;
    const s = layer.stride[d]!;
    const dl = layer.dilation[d]!;
    if (layer.padding === 'same') return Math.floor(Math.max(0, (out[d]! - 1) * s + (k - 1) * dl + 1 - image[d]!) / 2);
    return layer.padding[d]!;
  };
  return [0, 1, 2].map((i) => {
    const d = i - lead;
    if (d < 0) return { k: 1, s: 1, dl: 1, p: 0, in: 1, out: 1 };
    return {
      k: layer.kernelSize[d]!,
      s: layer.stride[d]!,
      dl: layer.dilation[d]!,
      p: pad(d),
      in: image[d]!,
      out: out[d]!,
    };
  });
}

/** `count` distinct positions of `total` (all of them when there are fewer), in increasing order. */
function samplePositions(total: number, count: number, g: Generator): number[] {
  if (total <= count) return Array.from({ length: total }, (_, i) => i);
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(g.int(total));
  return [...chosen].sort((a, b) => a - b);
}

/** Copies output `[N, C, ...P]` at positions (n·P + p) into [G, rows, C/G], minus the bias. */
function gatherTargets(
  y: Tensor,
  positions: readonly number[],
  groups: number,
  bias: ArrayLike<number> | null,
): Tensor {
  const [n, c] = y.shape as [number, number];
  const plane = y.size / (n * c);
  const per = c / groups;
  const v = y.values();
  const out = new Float32Array(groups * positions.length * per);
  for (const [r, pos] of positions.entries()) {
    const b = Math.floor(pos / plane);
    const p = pos % plane;
    for (let o = 0; o < c; o++) {
      const g = Math.floor(o / per);
      out[(g * positions.length + r) * per + (o % per)] = v[(b * c + o) * plane + p]! - (bias ? bias[o]! : 0);
    }
  }
  return new Tensor({ data: out, shape: [groups, positions.length, per], dtype: 'float32' });
}

/**
 * The patch pool of a layer on its calibration `inputs` (and its float output `y` on them): up to `maxRows`
 * sampled output positions (fewer where the patches would exceed 128 MB). Null for a layer it does not know.
 */
export function patchPool(layer: object, inputs: Tensor, y: Tensor, maxRows: number, g: Generator): PatchPool | null {
  const bias = (layer as { bias?: Tensor | null }).bias?.values() ?? null;
  if (layer instanceof Linear) {
    const j = layer.inFeatures;
    const total = inputs.size / j;
    const rows = samplePositions(total, Math.min(maxRows, Math.floor(POOL_FLOATS / j)), g);
    const x = inputs.values();
    const patches = new Float32Array(rows.length * j);
    for (const [r, pos] of rows.entries()) patches.set(x.subarray(pos * j, (pos + 1) * j), r * j);
    // the output as [rows, 1, out]: one "channel plane" of size 1 per row
    const flat = new Tensor({ data: y.values(), shape: [total, layer.outFeatures], dtype: 'float32' });
    return {
      patches: new Tensor({ data: patches, shape: [1, rows.length, j], dtype: 'float32' }),
      targets: gatherTargets(flat, rows, 1, bias),
      groups: 1,
    };
  }
  if (!(layer instanceof Conv1d || layer instanceof Conv2d || layer instanceof Conv3d)) return null;
  const [n, c] = inputs.shape as [number, number];
  const dims = convDims(layer, inputs.shape.slice(2), y.shape.slice(2));
  const groups = layer.groups;
  const cinG = c / groups;
  const kvol = dims[0]!.k * dims[1]!.k * dims[2]!.k;
  const j = cinG * kvol;
  const plane = dims[0]!.out * dims[1]!.out * dims[2]!.out;
  const rows = samplePositions(n * plane, Math.min(maxRows, Math.floor(POOL_FLOATS / (j * groups))), g);
  const x = inputs.values();
  const inPlane = dims[0]!.in * dims[1]!.in * dims[2]!.in;
  const patches = new Float32Array(groups * rows.length * j);
  const [dz, dy, dx] = dims as [(typeof dims)[0], (typeof dims)[0], (typeof dims)[0]];
  for (const [r, pos] of rows.entries()) {
    const b = Math.floor(pos / plane);
    let p = pos % plane;
    const ox = p % dx.out;
    p = Math.floor(p / dx.out);
    const oy = p % dy.out;
    const oz = Math.floor(p / dy.out);
    for (let ch = 0; ch < c; ch++) {
      const grp = Math.floor(ch / cinG);
      let at = (grp * rows.length + r) * j + (ch % cinG) * kvol;
      const base = (b * c + ch) * inPlane;
      for (let a = 0; a < dz.k; a++) {
        const iz = oz * dz.s - dz.p + a * dz.dl;
        for (let e = 0; e < dy.k; e++) {
          const iy = oy * dy.s - dy.p + e * dy.dl;
          for (let f = 0; f < dx.k; f++, at++) {
            const ix = ox * dx.s - dx.p + f * dx.dl;
            if (iz >= 0 && iz < dz.in && iy >= 0 && iy < dy.in && ix >= 0 && ix < dx.in)
              patches[at] = x[base + (iz * dy.in + iy) * dx.in + ix]!;
          }
        }
      }
    }
  }
  return {
    patches: new Tensor({ data: patches, shape: [groups, rows.length, j], dtype: 'float32' }),
    targets: gatherTargets(y, rows, groups, bias),
    groups,
  };
}
