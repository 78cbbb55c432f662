// Resize / Upsample: PyTorch's Upsample module where its modes match exactly, else a tensor resize node.
import { Upsample, type UpsampleOptions } from '@qtk/nn';
import { resize as resizeTensor, type ResizeOptions } from '@qtk/tensor';
import { OnnxFormatError } from '../errors.js';
import { Unsupported, type NodeContext } from './context.js';
import type { Handler } from './layers.js';

export const resize: Handler = (ctx) => {
  const x = ctx.ex(0);
  const mode = ctx.str('mode', 'nearest');
  let scales: number[] | null = null;
  let sizes: number[] | null = null;
  const floats = (i: number, what: string): number[] | null => {
    if (!ctx.has(i)) return null;
    if (!ctx.isConst(i)) throw new Unsupported(`${what} (input ${i}) must be a constant`);
    return Array.from(ctx.ex(i).values() as ArrayLike<number>, Number);
  };
  if (ctx.opType === 'Upsample') scales = ctx.opset >= 9 ? floats(1, 'scales') : ctx.floats('scales');
  else if (ctx.opset >= 11) {
    scales = floats(2, 'scales');
    sizes = ctx.has(3) ? ctx.constInts(3, 'sizes') : null;
    if (scales && scales.length === 0) scales = null;
  } else scales = floats(1, 'scales');
  if (!scales && !sizes) throw new Unsupported('needs scales or sizes');
  // opset 18: scales / sizes may cover only the axes listed, and sizes may keep the aspect ratio
  let coordinateScales: number[] | null = null;
  if (ctx.opType === 'Resize' && ctx.opset >= 18) {
    const axes = resizeAxes(ctx, x.ndim, (sizes ?? scales)!.length);
    if (scales) scales = x.shape.map((_, d) => (axes.includes(d) ? scales![axes.indexOf(d)]! : 1));
    if (sizes) {
      const given = sizes;
      sizes = x.shape.map((n, d) => (axes.includes(d) ? given[axes.indexOf(d)]! : n));
      const policy = ctx.str('keep_aspect_ratio_policy', 'stretch');
      if (policy !== 'stretch') {
        if (policy !== 'not_larger' && policy !== 'not_smaller') {
          throw new OnnxFormatError(
            `importOnnx: Resize '${ctx.name}': keep_aspect_ratio_policy '${policy}' is not one of stretch, not_larger, not_smaller; the model is invalid`,
          );
        }
        const ratios = axes.map((d) => sizes![d]! / x.shape[d]!);
        const scale = policy === 'not_larger' ? Math.min(...ratios) : Math.max(...ratios);
        sizes = x.shape.map((n, d) => (axes.includes(d) ? Math.floor(scale * n + 0.5) : n));
        coordinateScales = x.shape.map((_, d) => (axes.includes(d) ? scale : 1));
      }
    }
  }
  const ctm =
    ctx.opType === 'Upsample' || ctx.opset < 11
      ? 'asymmetric'
      : ctx.str('coordinate_transformation_mode', 'half_pixel');
  const nearestMode = ctx.opset < 11 ? 'floor' : ctx.str('nearest_mode', 'round_prefer_floor');
  if (mode !== 'nearest' && mode !== 'linear' && mode !== 'cubic')
    throw new Unsupported(`mode '${mode}' is not supported (nearest, linear and cubic are)`);
  if (ctm === 'tf_crop_and_resize')
    throw new Unsupported("coordinate_transformation_mode 'tf_crop_and_resize' is not supported");
  const outSize = sizes ?? x.shape.map((d, i) => Math.floor(d * scales![i]!));
  // antialias (opset 18) widens the linear and cubic filters when they shrink a dim; nearest, and enlarging, ignore it
  const shrinks = outSize.some((d, i) => d < x.shape[i]!);
  if (ctx.int('antialias', 0) !== 0 && mode !== 'nearest' && shrinks) {
    throw new Unsupported(
      `antialias = 1 with mode '${mode}' while downscaling [${x.shape.join(', ')}] to [${outSize.join(', ')}] is not supported; export the model without antialiasing (PyTorch: interpolate(..., antialias=False))`,
    );
  }
  ctx.limit(outSize.map((d) => (Number.isFinite(d) ? Math.max(0, d) : d)));
  // The Upsample module covers PyTorch's two modes exactly: nearest = asymmetric + floor, bilinear = half_pixel or align_corners.
  const spatialOnly =
    !coordinateScales &&
    x.ndim === 4 &&
    outSize[0] === x.shape[0] &&
    outSize[1] === x.shape[1] &&
    (!scales || (scales[0] === 1 && scales[1] === 1));
  const integerScales = scales?.slice(2).every((s) => Number.isInteger(s)) ?? false;
  const asUpsample =
    spatialOnly &&
    ((mode === 'nearest' &&
      ((ctm === 'asymmetric' && nearestMode === 'floor') ||
        (integerScales && ctm === 'half_pixel' && nearestMode === 'round_prefer_floor'))) ||
      (mode === 'linear' &&
        (ctm === 'half_pixel' ||
          (ctm === 'pytorch_half_pixel' && outSize.slice(2).every((s) => s > 1)) ||
          (ctm === 'align_corners' && sizes !== null))));
  if (asUpsample) {
    const opts: UpsampleOptions = { mode: mode === 'linear' ? 'bilinear' : 'nearest' };
    if (sizes) opts.size = [sizes[2]!, sizes[3]!];
    else opts.scaleFactor = [scales![2]!, scales![3]!];
    if (mode === 'linear') opts.alignCorners = ctm === 'align_corners';
    return [ctx.module(new Upsample(opts), [ctx.input(0)])];
  }
  const opts: ResizeOptions = {
    mode,
    coordinateTransformationMode: ctm as ResizeOptions['coordinateTransformationMode'],
    nearestMode: nearestMode as ResizeOptions['nearestMode'],
    cubicCoeffA: ctx.float('cubic_coeff_a', -0.75),
    excludeOutside: ctx.int('exclude_outside', 0) === 1,
  };
  if (sizes) opts.sizes = sizes;
  else opts.scales = scales!;
  if (coordinateScales) opts.scales = coordinateScales;
  return [ctx.fn(resizeTensor, [ctx.input(0), opts])];
};

/** Resize's `axes` (opset 18), normalised; all axes when absent. `count` values of scales or sizes must match them. */
function resizeAxes(ctx: NodeContext, rank: number, count: number): number[] {
  const given = ctx.ints('axes');
  const axes = given ? given.map((a) => (a < 0 ? a + rank : a)) : Array.from({ length: rank }, (_, i) => i);
  const bad = axes.some((a, i) => !Number.isInteger(a) || a < 0 || a >= rank || axes.indexOf(a) !== i);
  if (bad || axes.length !== count) {
    throw new OnnxFormatError(
      `importOnnx: Resize '${ctx.name}': ${given ? `axes [${given.join(', ')}]` : 'without axes, the scales or sizes'} must name ${count} distinct axes of an input of rank ${rank}; the model is invalid`,
    );
  }
  return axes;
}
