import { registerGradient } from '../autograd.js';
import { run1 } from '../dispatch.js';
import { InvalidArgumentError, ShapeError } from '../errors.js';
import { gemmArgs, gemmBatch } from '../gemm/gemm.js';
import { registerKernel, type Saved } from '../registry.js';
import { sizeOf } from '../shape.js';
import type { Tensor } from '../tensor.js';
import { perDim, shapeStr } from './conv-args.js';
import {
  channelSums,
  col2im,
  fromChannelMajor,
  geometry,
  im2col,
  toChannelMajor,
  type ConvGeometry,
} from './conv-im2col.js';
import { checkBias, checkGroups, convOperands } from './conv.js';
import { reshape } from './view.js';
import { f32, make } from './util.js';

/** Attributes of ConvTranspose; `pads` lists all begins then all ends (ONNX order). */
export interface ConvTransposeAttrs {
  stride: number[];
  pads: number[];
  dilation: number[];
  outputPadding: number[];
  groups: number;
}

/** (in − 1)·stride − padBegin − padEnd + dilation·(k − 1) + outputPadding + 1 */
function transposedSize(size: number, k: number, s: number, pb: number, pe: number, d: number, op: number): number {
  return (size - 1) * s - pb - pe + d * (k - 1) + op + 1;
}

interface Plan {
  /** Geometry of the matching forward convolution: its image is this op's output. */
  geom: ConvGeometry;
  out: number[];
  cin: number;
  cinG: number;
  cout: number;
  /** Rows of one group's column matrix: cout/groups · kernel volume. */
  kt: number;
  pin: number;
  npin: number;
}

function plan(x: Tensor, w: Tensor, a: ConvTransposeAttrs): Plan {
  const r = x.ndim - 2;
  const n = x.shape[0]!;
  const cin = x.shape[1]!;
  const image = x.shape.slice(2);
  const kernel = w.shape.slice(2);
  const out = image.map((s, i) =>
    transposedSize(s, kernel[i]!, a.stride[i]!, a.pads[i]!, a.pads[r + i]!, a.dilation[i]!, a.outputPadding[i]!),
  );
  const coutG = w.shape[1]!;
  const cout = coutG * a.groups;
  const geom = geometry(n, cout, out, kernel, image, a.stride, a.pads.slice(0, r), a.dilation);
  const pin = sizeOf(image);
  return { geom, out, cin, cinG: cin / a.groups, cout, kt: coutG * sizeOf(kernel), pin, npin: n * pin };
}

registerKernel<(i: Tensor[], a: ConvTransposeAttrs, s: Saved) => Tensor>({
  op: 'ConvTranspose',
  backend: 'cpu',
  fn: ([x, w, b], attrs, saved) => {
    const pl = plan(x!, w!, attrs);
    const { geom, cinG, kt, npin } = pl;
    const xT = toChannelMajor(f32(x!), geom.n, pl.cin, pl.pin);
    const wv = f32(w!);
    const cols = new Float32Array(attrs.groups * kt * npin);
    gemmBatch(attrs.groups, gemmArgs(true, false, kt, npin, cinG, wv, xT, cols), {
      a: cinG * kt,
      b: cinG * npin,
      c: kt * npin,
    });
    const y = new Float32Array(geom.n * pl.cout * sizeOf(pl.out));
    col2im(cols, geom, y);
    if (b) {
      const bv = f32(b);
      const pout = sizeOf(pl.out);
      for (let n = 0; n < geom.n; n++) {
        for (let c = 0; c < pl.cout; c++) {
          const base = (n * pl.cout + c) * pout;
          const v = bv[c]!;
          for (let i = 0; i < pout; i++) y[base + i]! += v;
        }
      }
    }
    saved.xT = xT;
    return make(y, [geom.n, pl.cout, ...pl.out]);
  },
});

registerGradient<ConvTransposeAttrs>('ConvTranspose', ({ inputs: [x, w, b], attrs, saved }, [gy]) => {
  const pl = plan(x!, w!, attrs);
  const { geom, cinG, kt, npin } = pl;
  const gv = f32(gy!);
  let dx: Tensor | null = null;
  let dw: Tensor | null = null;
  if (x!.requiresGrad || w!.requiresGrad) {
    // The gradient of a transposed conv is an ordinary conv of the output gradient.
    const cols = new Float32Array(attrs.groups * kt * npin);
    im2col(gv, geom, cols);
    if (x!.requiresGrad) {
      const wv = f32(w!);
      const dxT = new Float32Array(pl.cin * npin);
      gemmBatch(attrs.groups, gemmArgs(false, false, cinG, npin, kt, wv, cols, dxT), {
        a: cinG * kt,
        b: kt * npin,
        c: cinG * npin,
      });
      dx = make(fromChannelMajor(dxT, geom.n, pl.cin, pl.pin), x!.shape);
    }
    if (w!.requiresGrad) {
      const xT = (saved.xT as Float32Array | undefined) ?? toChannelMajor(f32(x!), geom.n, pl.cin, pl.pin);
      const out = new Float32Array(w!.size);
      gemmBatch(attrs.groups, gemmArgs(false, true, cinG, kt, npin, xT, cols, out), {
        a: cinG * npin,
        b: kt * npin,
        c: cinG * kt,
      });
      dw = make(out, w!.shape);
    }
  }
  const db = b?.requiresGrad ? make(channelSums(gv, geom.n, pl.cout, sizeOf(pl.out)), b.shape) : null;
  return [dx, dw, db];
});

export interface ConvTransposeOptions {
  stride?: number | readonly number[];
  /** Removed from both sides of each output dim (dilation·(k−1) − padding of implicit zero padding). */
  padding?: number | readonly number[];
  /** Extra size added to one side of each output dim, to pick among the input sizes a strided conv maps to the same size. */
  outputPadding?: number | readonly number[];
  dilation?: number | readonly number[];
  groups?: number;
}

function convTransposeNd(
  op: string,
  r: number,
  x: Tensor,
  weight: Tensor,
  bias: Tensor | null | undefined,
  o: ConvTransposeOptions,
): Tensor {
  const { xb, unbatched } = convOperands(op, r, x, weight, 'in_channels, out_channels/groups');
  const groups = o.groups ?? 1;
  const cin = xb.shape[1]!;
  if (weight.shape[0] !== cin) {
    throw new ShapeError(
      `${op}: weight ${shapeStr(weight.shape)} has ${weight.shape[0]} input channels (dim 0) but the input ${shapeStr(x.shape)} has ${cin}`,
    );
  }
  const cout = weight.shape[1]! * (Number.isInteger(groups) && groups > 0 ? groups : 1);
  checkGroups(op, groups, cin, cout, weight);
  if (bias) checkBias(op, bias, cout);
  const stride = perDim(o.stride ?? 1, r, op, 'stride', 1);
  const dilation = perDim(o.dilation ?? 1, r, op, 'dilation', 1);
  const padding = perDim(o.padding ?? 0, r, op, 'padding', 0);
  const outputPadding = perDim(o.outputPadding ?? 0, r, op, 'outputPadding', 0);
  outputPadding.forEach((p, i) => {
    if (p >= stride[i]! && p >= dilation[i]!) {
      throw new InvalidArgumentError(
        `${op}: outputPadding ${p} in dim ${i} must be smaller than the stride (${stride[i]}) or the dilation (${dilation[i]})`,
      );
    }
  });
  const kernel = weight.shape.slice(2);
  xb.shape.slice(2).forEach((s, i) => {
    if (transposedSize(s, kernel[i]!, stride[i]!, padding[i]!, padding[i]!, dilation[i]!, outputPadding[i]!) < 1) {
      throw new ShapeError(
        `${op}: padding [${padding.join(', ')}] leaves no output for input ${shapeStr(x.shape)} in spatial dim ${i}; reduce the padding`,
      );
    }
  });
  const attrs: ConvTransposeAttrs = { stride, pads: [...padding, ...padding], dilation, outputPadding, groups };
  const y = run1<ConvTransposeAttrs>('ConvTranspose', bias ? [xb, weight, bias] : [xb, weight], attrs);
  return unbatched ? reshape(y, y.shape.slice(1)) : y;
}

/** Transposed 2-d convolution (the gradient of conv2d w.r.t. its input): x [N, Cin, H, W], weight [Cin, Cout/groups, KH, KW]. */
export function convTranspose2d(
  x: Tensor,
  weight: Tensor,
  bias?: Tensor | null,
  options: ConvTransposeOptions = {},
): Tensor {
  return convTransposeNd('convTranspose2d', 2, x, weight, bias, options);
}

/** Transposed 1-d convolution: x [N, Cin, L], weight [Cin, Cout/groups, K]. */
export function convTranspose1d(
  x: Tensor,
  weight: Tensor,
  bias?: Tensor | null,
  options: ConvTransposeOptions = {},
): Tensor {
  return convTransposeNd('convTranspose1d', 1, x, weight, bias, options);
}
