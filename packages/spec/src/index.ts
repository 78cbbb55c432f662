export {
  QtkError,
  UnsupportedOpError,
  QConfigError,
  RegistryError,
  UnknownOpError,
  OptionsError,
  StateVersionError,
  PluginContractError,
  ObserverStateError,
} from './errors.js';
export { parseOptions } from './options.js';
export { QTK_VERSION, compareVersions } from './version.js';
export {
  QUANT_DTYPES,
  QUANT_STORAGE_DTYPE,
  OBSERVER_DTYPES,
  FLOAT32_EPS,
  quantDTypeSchema,
  observerDTypeSchema,
  quantRange,
  resolveQuantRange,
  scaleFromRange,
  scalesFromRanges,
  type QuantDType,
  type ObserverDType,
  type QuantRange,
} from './quant-dtype.js';
export { Registry } from '@qtk/tensor';
// The op catalog lives in @qtk/tensor (the bottom package) so @qtk/nn can register its modules. A march or
// plugin reads it and adds its own ops from here; registering implementations stays with the packages that
// implement ops, which import @qtk/tensor.
export {
  defineOp,
  getOp,
  hasOp,
  listOps,
  opOfModule,
  type FusedOp,
  type FusionRole,
  type OpDefinition,
  type OpMatch,
} from '@qtk/tensor';
export { opOfNode } from './op-of-node.js';
/**
 * Extension point: a third-party observer implements `ObserverV1` and registers an `ObserverFactoryV1` (writing-
 * an-observer.md).
 */
export {
  observerBaseShape,
  observerOptionsSchema,
  observerStateSchema,
  checkQscheme,
  withQscheme,
  type QParams,
  type QScheme,
  type ObserverBaseOptions,
  type ObserverState,
  type ObserverV1,
  type ObserverFactoryV1,
} from './observer.js';
/** Extension point: a fake-quant implements `FakeQuantV1` and registers its factory in `fakeQuants`. */
export {
  FAKE_QUANT_STATES,
  type FakeQuantState,
  roundingModeSchema,
  type FakeQuantV1,
  type FakeQuantFactoryV1,
} from './fake-quant.js';
/** Extension point: a fusion pattern table, registered in `fusionPatterns`. */
export type { FusionPatternV1, FusedOps } from './fusion-pattern.js';
/**
 * Extension point: a march implements `MarchBackendV1` (capability table, hooks) and registers in `marches`
 * (writing-a-march.md).
 */
export {
  OP_IMPLS,
  capabilityTableSchema,
  checkOpSupport,
  assertActivationDtype,
  defineCapabilities,
  type Constraint,
  type OpCapability,
  type CapabilityTable,
  type CapabilityTableInput,
  type ConvertNodeContext,
  type TableOptions,
  type NodeTableOptions,
  type ConvertedNode,
  type MarchHooksV1,
  type NodeSupport,
  type NodeSupportContext,
  type NodeSupportReason,
  type MarchPrepareContext,
  type MarchPreparePass,
  type MarchGraphRewrite,
  type MarchBackendV1,
  type OpSupport,
} from './march-backend.js';
export { opsWithImpl, spatialDimsIn, type OpCapabilityInput } from './capability-rows.js';
export { observers, fakeQuants, fusionPatterns, marches, createObserver } from './registries.js';
export { selectDefaultMarch, defaultMarch, resolveMarchOption } from './current-march.js';
/**
 * Extension point: a plugin package registers its observers, fake-quants, patterns and marches by object or module
 * name.
 */
export { registerPlugin, registerPluginModule, type QtkPluginV1 } from './plugin-module.js';
export { syncObservers } from './sync-observers.js';
export {
  FAKE_QUANT_ROLE,
  TIED_FAKE_QUANT_METHOD,
  fakeQuantRoleOf,
  setFakeQuantRole,
  type FakeQuantRole,
} from './fake-quant-role.js';
