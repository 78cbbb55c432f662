import { registerLeafModule } from '@qtk/ir';
import { FakeQuantize } from './fake-quantize.js';
import { registerBuiltinFakeQuants } from './qconfig.js';
import { registerFakeQuantCodecs } from './codec.js';

export { fakeQuantize } from './fake-quant-op.js';
export { FakeQuantize, type FakeQuantizeOptions } from './fake-quantize.js';
export { getDefaultRounding, setDefaultRounding } from './rounding.js';
export { countClamped } from './saturation.js';
export { withArgs, qconfig, type QConfig, type FakeQuantFactory } from './qconfig.js';
export { checkFakeQuantOptions, type FakeQuantKwargs } from './fake-quant-kwargs.js';
export {
  getDefaultQconfig,
  getDefaultQatQconfig,
  getDefaultQatOutQconfig,
  getDefaultCalibQconfig,
  defaultQatQconfig,
  defaultQatOutQconfig,
  defaultCalibQconfig,
  defaultCalibOutQconfig,
  defaultLsqQconfig,
  defaultQat16bitQconfig,
  type FakeQuantKind,
  type DefaultQconfigOptions,
  type DefaultQatQconfigOptions,
  type DefaultQatOutQconfigOptions,
  type DefaultCalibQconfigOptions,
} from './default-qconfigs.js';
export { setFakeQuantize, namedFakeQuants } from './set-fake-quantize.js';

registerBuiltinFakeQuants();
// an observer cannot run on trace proxies: fake-quants stay call_module nodes when a prepared model is retraced
registerLeafModule(FakeQuantize);
// FakeQuantize serializes (options, state, observer statistics) in saved QAT models
registerFakeQuantCodecs();
