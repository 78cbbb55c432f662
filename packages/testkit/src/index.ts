export {
  describeObserverConformance,
  expectSaneQparams,
  BASE_INVALID_OPTIONS,
  type ObserverConformanceOptions,
} from './observer-conformance.js';
