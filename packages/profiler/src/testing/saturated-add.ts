// The precision tests' broken model: TinyResNet with its fused add saturated. Not a test file itself and not part
// of the package build.
import { getDefaultQconfig, qconfig, withArgs } from '@qtk/fake-quant';
import { randomInputs } from '@qtk/test-models';

const minMax = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');

/** Min-max everywhere; TinyResNet's conv1 + bn1 + add + relu1 fuse into `_generated_add_0`, whose tiny fixed output scale saturates it. */
export const saturatedAddDict = {
  global: minMax,
  moduleName: {
    _generated_add_0: qconfig(withArgs({ observer: 'fixed_scale', scale: 0.001, dtype: 'qint8' }), minMax.weight),
  },
};
/** Two calibration batches of TinyResNet inputs. */
export const calib = [1, 2].map((s) => randomInputs(s, 8));
/** One evaluation batch of 64 inputs. */
export const evalSet = { inputs: [randomInputs(5, 64)] };
