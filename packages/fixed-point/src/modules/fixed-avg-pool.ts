import { Module } from '@qtk/nn';
import type { QuantDType } from '@qtk/spec';
import { DTypeError, forEachAvgWindow, InvalidArgumentError, Tensor, type AvgPoolAttrs } from '@qtk/tensor';
import { requantizeValue, type RequantizePlan, type RequantizePlanner } from '../requantize.js';
import { requantizePlanner, requantizePlannerName } from '../requantize-planners.js';
import { QTensor, STORAGE_DTYPE } from '../qtensor.js';

/** Builds the requantize plan of a window of N elements: s_acc = s_in / N to s_out (march-chosen rule). */
export type WindowPlanner = (sAcc: number, sOut: number, outDtype: QuantDType) => RequantizePlan;

/** `maxKernel`: the march's kernel limit, checked when the model runs; `where` names node, op and march in that error. */
export type AvgPoolWindows =
  | { kind: 'fixed'; attrs: AvgPoolAttrs; maxKernel?: number; where?: string }
  | { kind: 'adaptive'; outputSize: [number | null, number | null]; maxKernel?: number; where?: string };

/** One pooling window: rows [y0, y1), columns [x0, x1), divisor `div`. */
export interface AvgPoolWindow {
  y0: number;
  y1: number;
  x0: number;
  x1: number;
  div: number;
}

/** The windows of a pooling over an H×W map, row-major over the output, with the output size. */
export function avgPoolWindowList(
  spec: AvgPoolWindows,
  H: number,
  W: number,
): { OH: number; OW: number; windows: AvgPoolWindow[] } {
  const windows: AvgPoolWindow[] = [];
  if (spec.kind === 'fixed') {
    const [OH, OW] = forEachAvgWindow(H, W, spec.attrs, (_o, y0, y1, x0, x1, div) =>
      windows.push({ y0, y1, x0, x1, div }),
    );
    return { OH, OW, windows };
  }
  const OH = spec.outputSize[0] ?? H;
  const OW = spec.outputSize[1] ?? W;
  for (let oy = 0; oy < OH; oy++) {
    const y0 = Math.floor((oy * H) / OH);
    const y1 = Math.ceil(((oy + 1) * H) / OH);
    for (let ox = 0; ox < OW; ox++) {
      const x0 = Math.floor((ox * W) / OW);
      const x1 = Math.ceil(((ox + 1) * W) / OW);
      windows.push({ y0, y1, x0, x1, div: (y1 - y0) * (x1 - x0) });
    }
  }
  return { OH, OW, windows };
}

/**
 * Average pooling in fixed point (march-semantics.md §1): the exact int32 sum S of each window,
 * then requantize from s_acc = s_in / N (N the window's divisor) to the output scale. Plans are
 * derived once per (input scale, divisor) with the march's requantize rule, and cached.
 */
export class FixedAvgPool2d extends Module {
  static override readonly takesQuantizedValues = true;

  readonly windows: AvgPoolWindows;
  readonly outScale: number;
  readonly outDtype: QuantDType;
  /** The registered name of the march's requantize planner (requantizePlanners), stored in model files; null when unregistered. */
  readonly rule: string | null;
  readonly planner: RequantizePlanner;
  private readonly plans = new Map<string, RequantizePlan>();

  /** `planner`: the march's requantize planner, or the name it is registered under. */
  constructor(windows: AvgPoolWindows, outScale: number, outDtype: QuantDType, planner: string | RequantizePlanner) {
    super();
    this.windows = windows;
    this.outScale = Math.fround(outScale);
    this.outDtype = outDtype;
    this.planner = typeof planner === 'string' ? requantizePlanner(planner) : planner;
    this.rule = typeof planner === 'string' ? planner : requantizePlannerName(planner);
  }

  private planFor(sIn: number, div: number): RequantizePlan {
    const key = `${sIn}/${div}`;
    let p = this.plans.get(key);
    if (!p) {
      p = this.planner(sIn / div, this.outScale, this.outDtype);
      this.plans.set(key, p);
    }
    return p;
  }

  forward(x: QTensor): QTensor {
    if (!(x instanceof QTensor)) throw new DTypeError(`FixedAvgPool2d: expected a quantized input, got ${typeof x}`);
    if (x.shape.length < 3)
      throw new InvalidArgumentError(`FixedAvgPool2d: expected [N, C, H, W] or [C, H, W], got [${x.shape}]`);
    const sIn = x.tensorScale;
    const shape = x.shape;
    const H = shape[shape.length - 2]!;
    const W = shape[shape.length - 1]!;
    const planes = x.data.size / (H * W);
    const v = x.ints();
    const { OH, OW, windows } = avgPoolWindowList(this.windows, H, W);
    const max = this.windows.maxKernel;
    const big = max === undefined ? undefined : windows.find((w) => w.y1 - w.y0 > max || w.x1 - w.x0 > max);
    if (big) {
      throw new InvalidArgumentError(
        `FixedAvgPool2d${this.windows.where ? ` (${this.windows.where})` : ''}: a ${big.y1 - big.y0}×${big.x1 - big.x0} window exceeds this march's average-pool kernel limit of ${max} (input ${H}×${W}); pool in stages or choose a march with adaptive pooling`,
      );
    }
    const plans = windows.map((w) => this.planFor(sIn, w.div));
    const storage = STORAGE_DTYPE[this.outDtype];
    const out = new Tensor({
      data: new (storage === 'int8' ? Int8Array : storage === 'int16' ? Int16Array : Int32Array)(planes * OH * OW),
      shape: [...shape.slice(0, -2), OH, OW],
      dtype: storage,
    });
    const o = out.data;
    for (let p = 0; p < planes; p++) {
      const base = p * H * W;
      for (let k = 0; k < windows.length; k++) {
        const w = windows[k]!;
        let s = 0;
        for (let y = w.y0; y < w.y1; y++) for (let xx = w.x0; xx < w.x1; xx++) s += v[base + y * W + xx]!;
        o[p * windows.length + k] = requantizeValue(s, plans[k]!);
      }
    }
    return new QTensor(out, [this.outScale], this.outDtype);
  }

  override extraRepr(): string {
    return `${this.windows.kind === 'fixed' ? `kernel=[${this.windows.attrs.kernel}]` : `output=[${this.windows.outputSize}]`}, out=${this.outDtype}`;
  }
}
