// horizon_plugin_pytorch's non-heterogeneous flow, step by step: calibrate with the calibration qconfig, then QAT with
// the QAT qconfig and an "out" qconfig on the output conv. Its guide calls prepare_qat_fx on the calibrated model;
// QTK refuses that (it would keep the calibration fake-quants and ignore the new qconfigs) with the fix, and the fix
// starts QAT from the calibrated scales.
import {
  defaultCalibQconfig,
  defaultQatOutQconfig,
  defaultQatQconfig,
  type FakeQuantize,
  namedFakeQuants,
} from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { BatchNorm2d, Conv2d, DeQuantStub, FloatFunctional, Module, QuantStub, ReLU } from '@qtk/nn';
import { Generator, rand, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { calibrate, prepareQatFx, type QatModule, startQat } from './index.js';

const g = new Generator(5);

class ConvBnRelu extends Module {
  readonly conv = new Conv2d(3, 3, 1, { generator: g });
  readonly bn = new BatchNorm2d(3);
  readonly relu = new ReLU();
  forward(x: Tensor): Tensor {
    return this.relu.call(this.bn.call(this.conv.call(x)));
  }
}

class ConvAddRelu extends Module {
  readonly conv = new Conv2d(3, 3, 1, { generator: g });
  readonly add = new FloatFunctional();
  readonly relu = new ReLU();
  forward(x: Tensor): Tensor {
    return this.relu.call(this.add.add(x, this.conv.call(x)));
  }
}

/** The guide's NonHybridModel, at a smaller input. */
class NonHybridModel extends Module {
  readonly quant = new QuantStub();
  readonly layer0 = new ConvBnRelu();
  readonly layer1 = new ConvAddRelu();
  readonly conv1 = new Conv2d(3, 3, 1, { generator: g });
  readonly dequant = new DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.conv1.call(this.layer1.call(this.layer0.call(this.quant.call(x)))));
  }
}

const scaleOf = (fq: unknown) => (fq ? Array.from((fq as FakeQuantize).scale.values()) : null);

describe("calibration, then QAT with an output layer's out qconfig (horizon_plugin_pytorch's guide)", () => {
  it('refuses preparing the calibrated model again, and its fix starts QAT from the calibrated scales', () => {
    const model = new NonHybridModel().eval();
    const options = { march: 'bayes', onWarning: () => {} };
    const calibrationModel = prepareQatFx(model, { global: defaultCalibQconfig }, options);
    calibrate(
      calibrationModel,
      Array.from({ length: 5 }, (_, i) => rand([2, 3, 8, 8], { generator: new Generator(10 + i) })),
      { onWarning: () => {} },
    );
    const qatDict = { global: defaultQatQconfig, moduleName: [['conv1', defaultQatOutQconfig]] as const };
    expect(() => prepareQatFx(calibrationModel, qatDict, options)).toThrow(
      /^prepareQatFx: the model is already prepared \(it has fake-quants\); prepare the float model\. .*startQat\(qat, calibrated\.stateDict\(\)\)/,
    );

    const qat = prepareQatFx(model, qatDict, options);
    startQat(qat, calibrationModel.stateDict());
    // the output conv gives int32: no output fake-quant, though calibration observed one
    const conv1 = qat.getSubmodule('conv1') as QatModule;
    expect(conv1.activationPostProcess).toBeNull();
    expect((calibrationModel.getSubmodule('conv1') as QatModule).activationPostProcess).not.toBeNull();
    // every other fake-quant starts from the calibrated scale, in QAT state, the model in training mode
    const calibrated = new Map(namedFakeQuants(calibrationModel));
    const fakeQuants = namedFakeQuants(qat);
    expect(fakeQuants.length).toBe(calibrated.size - 1);
    for (const [name, fq] of fakeQuants) {
      expect([name, scaleOf(fq)]).toEqual([name, scaleOf(calibrated.get(name))]);
      expect([name, fq.fakeQuantState]).toEqual([name, 'QAT']);
    }
    expect(qat.training).toBe(true);
  });
});
