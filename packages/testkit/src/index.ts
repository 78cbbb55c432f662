export {
  describeObserverConformance,
  expectSaneQparams,
  BASE_INVALID_OPTIONS,
  type ObserverConformanceOptions,
} from './observer-conformance.js';
export {
  describeMarchConformance,
  planMarchOps,
  type MarchConformanceOptions,
  type OpPlan,
} from './march-conformance.js';
export { OP_PROBES, type OpProbe, type ProbeCase, type ProbeContext } from './probes.js';
export { UnaryProbeNet, BinaryProbeNet, type Parts } from './probe-nets.js';
export {
  IMPL_STEP_BOUNDS,
  OP_STEP_BOUNDS,
  kinkStepBound,
  stepBound,
  type StepBound,
  type OpImpl,
} from './tolerances.js';
