// The visualisation export of calls other than module calls on a float or QAT model: int16 composites
// with a tensor-method reshape between them, and a function returning several tensors.
import { calibrate, convertFx, prepareQatFx, type QatModule } from '@qtk/core';
import { defaultQat16bitQconfig, defaultQatQconfig, type FakeQuantize } from '@qtk/fake-quant';
import type { LayerNormQat } from '@qtk/fixed-point';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import '@qtk/march-bayes';
import { DeQuantStub, LayerNorm, Linear, Module, QuantStub, Softmax } from '@qtk/nn';
import { add, Generator, randn, split, type Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { DataType, decodeModel } from '@qtk/onnx';
import { attrsOf, bits, floatBits, str } from '../testing/read-attributes.js';
import { exportQuantizedOnnxBytes } from './export-quantized-onnx.js';

/** Linear, an int16 LayerNorm and a Softmax (composites on bayes), with a tensor-method reshape between them. */
class CompositeNet extends Module {
  readonly quant = new QuantStub();
  readonly fc = new Linear(8, 8, { generator: new Generator(1) });
  readonly ln = new LayerNorm(8);
  readonly sm = new Softmax({ dim: -1 });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    const y = this.ln.call(this.fc.call(this.quant.call(x)));
    return this.dequant.call(this.sm.call(y.reshape([-1, 2, 4])));
  }
}

describe('exportQuantizedOnnx of composites, int16 and a tensor method', () => {
  let qat: GraphModule;
  let fixedComposite: GraphModule;
  const x = randn([2, 8], { generator: new Generator(3) });
  beforeAll(() => {
    qat = prepareQatFx(
      new CompositeNet().eval(),
      { global: defaultQatQconfig, moduleName: { ln: defaultQat16bitQconfig } },
      { march: 'bayes', onWarning: () => {} },
    );
    calibrate(qat, [randn([4, 8], { generator: new Generator(2) })]);
    fixedComposite = convertFx(qat, { march: 'bayes', onWarning: () => {} });
  });

  it('draws the reshape call as its own node that keeps the int16 scale, and every composite step’s scale', () => {
    const model = decodeModel(exportQuantizedOnnxBytes(qat, x));
    const calls = qat.graph.nodes.filter((n) => n.op.startsWith('call_'));
    expect(model.graph!.node!.map((n) => n.name)).toEqual(calls.map((n) => n.name));
    const byName = new Map(model.graph!.node!.map((n) => [n.name!, n]));
    const reshape = attrsOf(byName.get('reshape')!);
    expect(byName.get('reshape')!.op_type).toBe('Reshape');
    expect(str(reshape.get('tensor_method'))).toBe('reshape');
    expect(reshape.get('arg_1')!.ints).toEqual([-1, 2, 4]);
    const ln = qat.getSubmodule('ln') as QatModule;
    const lnForm = ln.module as LayerNormQat;
    expect(str(reshape.get('output_dtype'))).toBe('qint16');
    expect(floatBits(reshape.get('output_scale'))).toEqual(bits(ln.activationPostProcess!.scale.values()));
    const lnAttrs = attrsOf(byName.get('ln')!);
    for (const step of ['mean', 'sub', 'square', 'variance', 'rsqrt', 'normalized'] as const) {
      const fq = lnForm.steps[step] as unknown as FakeQuantize;
      expect(floatBits(lnAttrs.get(`${step}_scale`))).toEqual(bits(fq.scale.values()));
    }
  });

  it('gives the fixed-point LayerNorm an int16 output and the softmax an int16 input', () => {
    const model = decodeModel(exportQuantizedOnnxBytes(fixedComposite, x));
    const byName = new Map(model.graph!.node!.map((n) => [n.name!, n]));
    expect(str(attrsOf(byName.get('ln')!).get('output_dtype'))).toBe('qint16');
    expect(str(attrsOf(byName.get('sm')!).get('input_dtype'))).toBe('qint16');
    expect(model.graph!.value_info!.find((v) => v.name === 'ln')!.type!.tensor_type!.elem_type).toBe(DataType.INT16);
  });
});

/** A float model whose split returns two tensors, read back by getitem. */
class SplitNet extends Module {
  forward(x: Tensor): Tensor {
    const [a, b] = split(x, 2, 1);
    return add(a!, b!);
  }
}

describe('exportQuantizedOnnx of a call returning several tensors', () => {
  it('gives the split one node with two outputs, read by the add without getitem nodes', () => {
    const gm = symbolicTrace(new SplitNet());
    const x = randn([2, 4], { generator: new Generator(5) });
    const model = decodeModel(exportQuantizedOnnxBytes(gm, x));
    expect(model.graph!.node!.map((n) => [n.op_type, n.output])).toEqual([
      ['Split', ['split_0', 'split_1']],
      ['Add', ['add']],
    ]);
    expect(model.graph!.node![1]!.input).toEqual(['split_0', 'split_1']);
    expect(model.graph!.value_info!.map((v) => v.name).sort()).toEqual(['split_0', 'split_1']);
    expect(str(attrsOf(model.graph!.node![1]!).get('input_0_dtype'))).toBe('float32');
  });
});
