import { FixedValueOp, planRequantizeWide, type Quantize } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import * as nn from '@qtk/nn';
import {
  contiguous,
  expand,
  flatten,
  interpolate,
  maxPool2d,
  pad,
  permute,
  relu,
  slice,
  split,
  squeeze,
  transpose,
  unsqueeze,
  type Tensor,
} from '@qtk/tensor';
import { describe, expect, test } from 'vitest';
import { exportAndCompare, fixedPointOf, uniformInput } from '../testing/fixed-models.js';
import { onGrid, rangeInts } from '../testing/integer-inputs.js';

/** The value ops both marches convert: split and its items, zero pad, pixel / channel shuffle, nearest resizes, max pool, flatten, relu. */
class Movement extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly shuffle = new nn.PixelShuffle(2);
  readonly channels = new nn.ChannelShuffle(2);
  readonly upSize = new nn.Upsample({ size: [9, 7], mode: 'nearest' });
  readonly upTwice = new nn.Upsample({ scaleFactor: 2, mode: 'nearest' });
  readonly relu = new nn.ReLU();
  readonly cat = new nn.FloatFunctional();
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    const [a, b] = split(q, [4, 4], 1);
    const c = this.shuffle.call(this.channels.call(pad(b!, [1, 1, 2, 0])));
    const d = maxPool2d(c, 2, { stride: 1, padding: 1 });
    const e = this.upSize.call(a!);
    const f = interpolate(a!, { scaleFactor: 1.5, mode: 'nearest' });
    const g = this.upTwice.call(relu(a!));
    return this.dequant.call(
      this.cat.cat([flatten(d, 1), flatten(e, 1), flatten(f, 1), flatten(this.relu.call(g), 1)], 1),
    );
  }
}

/** bayes's further value ops: slices (negative step), permute / transpose, squeeze / unsqueeze, expand, relu6, pixel unshuffle. */
class MoreMovement extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly unshuffle = new nn.PixelUnshuffle(2);
  readonly relu6 = new nn.ReLU6();
  readonly cat = new nn.FloatFunctional();
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    const a = slice(q, { axis: -1, start: -2, end: 0, step: -2 });
    const b = slice(q, { axis: 2, start: 1, end: 100 });
    const c = transpose(permute(this.unshuffle.call(q), [0, 2, 3, 1]), 1, 2);
    const d = expand(unsqueeze(squeeze(slice(q, { axis: 1, start: 0, end: 1 }), 1), 0), [2, -1, -1, -1]);
    const e = contiguous(this.relu6.call(q));
    return this.dequant.call(
      this.cat.cat([flatten(a, 1), flatten(b, 1), flatten(c, 1), flatten(transpose(d, 0, 1), 1), flatten(e, 1)], 1),
    );
  }
}

/** The Tensor-method forms: permute(...dims), transpose, view(...shape), reshape, split, slice, squeeze / unsqueeze, expand, contiguous. */
class MethodMovement extends nn.Module {
  readonly quant = new nn.QuantStub();
  readonly cat = new nn.FloatFunctional();
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    const q = this.quant.call(x);
    const parts = q.split([1, 2], 1);
    const c = parts[0]!.permute(0, 2, 3, 1).transpose(1, 2).contiguous();
    const d = parts[1]!.slice({ axis: 3, start: 1, step: 2 }).unsqueeze(0).squeeze(0);
    // a second item of the same piece: its own node, its own ONNX value
    const e = parts[0]!.expand([-1, 3, -1, -1]);
    return this.dequant.call(this.cat.cat([c.view(3, -1), d.reshape([3, -1]), e.flatten(1)], 1));
  }
}

function valueOpLabels(fixed: GraphModule): string[] {
  return fixed.graph.nodes
    .filter((n) => n.op === 'call_module')
    .map((n) => fixed.getSubmodule(n.target))
    .filter((m): m is FixedValueOp => m instanceof FixedValueOp)
    .map((m) => m.label);
}

describe('integer export: value ops', () => {
  const cases = [
    { march: 'bayes', dtype: 'qint8' },
    { march: 'bayes', dtype: 'qint16' },
    { march: 'bernoulli2', dtype: 'qint8' },
  ] as const;
  for (const { march, dtype } of cases)
    test(`${march} ${dtype}: split items, pad, shuffles, nearest resizes, pools move QTK's integers`, async () => {
      const fixed = fixedPointOf(new Movement(), { march, dtype, calibration: [uniformInput([2, 8, 6, 6], 1, -2, 2)] });
      const labels = valueOpLabels(fixed);
      for (const l of [
        'split',
        'getitem',
        'pad',
        'channel_shuffle',
        'pixel_shuffle',
        'max_pool2d',
        'resize_nearest',
        'relu',
      ])
        expect(labels).toContain(l);
      // interpolate has an output fake-quant of its own (Upsample keeps its input's): the moved integers are requantized to it
      const resized = fixed.graph.nodes
        .filter((n) => n.op === 'call_module')
        .map((n) => fixed.getSubmodule(n.target))
        .filter((m) => m instanceof FixedValueOp && m.label === 'resize_nearest') as FixedValueOp[];
      expect(resized).toHaveLength(3);
      expect(resized.filter((m) => m.output?.plan)).toHaveLength(1); // interpolate's
      const x = onGrid(fixed, 'quant', rangeInts(dtype, 3 * 8 * 36, 4), [3, 8, 6, 6]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      // split's pieces are compared as the getitems that take them
      expect(comparison.nodes.filter((n) => n.op === 'FixedValueOp').length).toBe(labels.length - 1);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });

  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes ${dtype}: slices, transposes, squeeze / unsqueeze / expand, relu6 move QTK's integers`, async () => {
      const fixed = fixedPointOf(new MoreMovement(), {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([2, 3, 6, 6], 1, -8, 8)],
      });
      const labels = valueOpLabels(fixed);
      for (const l of ['slice', 'transpose', 'pixel_unshuffle', 'reshape', 'expand', 'relu6'])
        expect(labels).toContain(l);
      const x = onGrid(fixed, 'quant', rangeInts(dtype, 3 * 3 * 36, 8), [3, 3, 6, 6]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      expect(comparison.nodes.filter((n) => n.op === 'FixedValueOp').length).toBe(labels.length);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });

  for (const dtype of ['qint8', 'qint16'] as const)
    test(`bayes ${dtype}: the Tensor-method forms move QTK's integers`, async () => {
      const fixed = fixedPointOf(new MethodMovement(), {
        march: 'bayes',
        dtype,
        calibration: [uniformInput([3, 3, 6, 6], 1, -8, 8)],
      });
      const labels = valueOpLabels(fixed);
      for (const l of ['split', 'getitem', 'transpose', 'reshape', 'slice', 'expand', 'flatten'])
        expect(labels).toContain(l);
      expect(labels.filter((l) => l === 'getitem')).toHaveLength(3);
      const x = onGrid(fixed, 'quant', rangeInts(dtype, 3 * 3 * 36, 8), [3, 3, 6, 6]);
      const { summary, comparison } = await exportAndCompare(fixed, x);
      expect(new Set(comparison.nodes.map((n) => n.value)).size).toBe(comparison.nodes.length);
      expect(comparison.nodes.filter((n) => n.op === 'FixedValueOp').length).toBe(labels.length - 1);
      expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
    });

  test('bayes: a split item with an output requantize of its own (set on the converted module)', async () => {
    const fixed = fixedPointOf(new Movement(), { march: 'bayes', calibration: [uniformInput([2, 8, 6, 6], 1, -2, 2)] });
    const node = fixed.graph.nodes.find((n) => {
      const m = n.op === 'call_module' ? fixed.getSubmodule(n.target) : null;
      return m instanceof FixedValueOp && m.label === 'getitem';
    })!;
    const sIn = (fixed.getSubmodule('quant') as Quantize).scale;
    const sOut = Math.fround(sIn * 1.7);
    const output = { scale: sOut, dtype: 'qint16', plan: planRequantizeWide(sIn, sOut, 'qint16') } as const;
    fixed.setSubmodule(node.target, new FixedValueOp({ kind: 'function', name: 'getitem' }, 'getitem', output));
    const x = onGrid(fixed, 'quant', rangeInts('qint8', 3 * 8 * 36, 4), [3, 8, 6, 6]);
    const { summary, comparison } = await exportAndCompare(fixed, x);
    expect(comparison.nodes.find((n) => n.node === node.name)!.dtype).toBe('qint16');
    expect(summary).toBe(`all ${comparison.nodes.length} compared values identical`);
  });
});
