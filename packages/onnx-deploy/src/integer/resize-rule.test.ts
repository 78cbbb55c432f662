import { FixedResize } from '@qtk/fixed-point';
import { DeQuantStub, Module, QuantStub, Upsample } from '@qtk/nn';
import { interpolate, type InterpolateOptions, type Tensor } from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { inputQuantize } from '../testing/integer-grid.js';

class UpNet extends Module {
  readonly quant = new QuantStub();
  readonly up: Upsample;
  readonly dequant = new DeQuantStub();
  constructor(options: ConstructorParameters<typeof Upsample>[0]) {
    super();
    this.up = new Upsample(options);
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.up.call(this.quant.call(x)));
  }
}

class InterpolateNet extends Module {
  readonly quant = new QuantStub();
  readonly dequant = new DeQuantStub();
  constructor(readonly options: InterpolateOptions) {
    super();
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(interpolate(this.quant.call(x), this.options));
  }
}

/** Uniform values, the first ones the extremes of the grid and beyond (saturation), then ties. */
function rangeInput(shape: number[], seed: number, scale: number, qmax: number): Tensor {
  const x = uniformInput(shape, seed, -qmax * scale, qmax * scale);
  x.values().set([4 * qmax * scale, -4 * qmax * scale, qmax * scale, -qmax * scale, 0.5 * scale, -0.5 * scale], 0);
  return x;
}

function resizeOf(fixed: ReturnType<typeof fixedPointOf>, path: string): FixedResize {
  const kinds = fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target).constructor.name);
  expect(kinds).toEqual(['Quantize', 'FixedResize', 'Dequantize']);
  return fixed.getSubmodule(path) as FixedResize;
}

const CASES: [string, ConstructorParameters<typeof Upsample>[0]][] = [
  ['scale factor 2', { scaleFactor: 2, mode: 'bilinear' }],
  ['size 9×13, align corners', { size: [9, 13], mode: 'bilinear', alignCorners: true }],
  ['size 4×3 (down)', { size: [4, 3], mode: 'bilinear' }],
];

describe('integer export: FixedResize (bilinear)', () => {
  for (const [march, dtype] of [
    ['bayes', 'qint8'],
    ['bayes', 'qint16'],
    ['bernoulli2', 'qint8'],
  ] as const)
    for (const [label, options] of CASES)
      test(`${march} ${dtype}, ${label}: taps gathered, weights exact, identical`, async () => {
        const calib = [uniformInput([2, 3, 5, 7], 1, -2, 2)];
        const fixed = fixedPointOf(new UpNet(options), { march, dtype, calibration: calib });
        resizeOf(fixed, 'up');
        const q = inputQuantize(fixed);
        const x = rangeInput([2, 3, 5, 7], 2, q.scale, dtype === 'qint8' ? 127 : 32767);
        const { summary } = await exportAndCompare(fixed, x);
        expect(summary).toBe('all 3 compared values identical');
      });

  // a functional interpolate has its own output fake-quant: the accumulator goes through the march's plan
  for (const [march, dtype] of [
    ['bayes', 'qint8'],
    ['bayes', 'qint16'],
    ['bernoulli2', 'qint8'],
  ] as const)
    test(`${march} ${dtype}, functional interpolate with its own output scale: requantized by the plan, identical`, async () => {
      const calib = [uniformInput([1, 2, 6, 6], 3, -1, 1)];
      const fixed = fixedPointOf(new InterpolateNet({ scaleFactor: 1.5, mode: 'bilinear' }), {
        march,
        dtype,
        calibration: calib,
      });
      const node = fixed.graph.nodes.find(
        (n) => n.op === 'call_module' && fixed.getSubmodule(n.target) instanceof FixedResize,
      )!;
      const resize = fixed.getSubmodule(node.target) as FixedResize;
      expect(resize.outScale).not.toBeNull();
      expect(resize.options).toBeNull(); // the options come as the call's argument
      const q = inputQuantize(fixed);
      const { summary } = await exportAndCompare(
        fixed,
        rangeInput([1, 2, 6, 6], 4, q.scale, dtype === 'qint8' ? 127 : 32767),
      );
      expect(summary).toBe('all 3 compared values identical');
    });
});
