export {
  TraceError,
  GraphError,
  GraphValidationError,
  SerializationError,
  ModuleConfigError,
  PatternError,
} from './errors.js';
export { Node, mapArg, type Opcode, type Argument } from './node.js';
export { IMPORTED_NAMES, importedNamesOf } from './imported-names.js';
export { Graph, sanitizeName } from './graph.js';
export { formatArgument, formatArgs, formatTarget } from './format.js';
/** Extension point: a module class that tracing keeps opaque (a leaf) is registered here. */
export { leafModules, registerLeafModule } from './leaf-modules.js';
export { Tracer, getattr, getitem, type TraceOptions } from './tracer.js';
export { fxWrap, fxWrapMethod, type FxWrapOptions } from './fx-wrap.js';
export { GraphModule, SubmoduleContainer } from './graph-module.js';
export { findSubmodule } from './find-submodule.js';
/** Extension point: `registerTraceable` makes a function a node of the traced graph rather than traced through. */
export { symbolicTrace, registerTraceable } from './symbolic-trace.js';
export {
  MatchAll,
  anyOf,
  subclassOf,
  validatePattern,
  type Pattern,
  type PatternElement,
  type Match,
} from './pattern.js';
export {
  RuleTable,
  applyRules,
  findMatches,
  type RewriteRule,
  type RewriteContext,
  type AppliedRewrite,
  type ApplyRulesOptions,
} from './rewrite.js';
/** Extension point: a module class registers its codec in `moduleCodecs` so model files can save and load it. */
export { moduleCodecs, CONFIG_LIMITS, type ModuleCodec, type JsonValue } from './module-codecs.js';
export { serializeGraphModule, deserializeGraphModule, graphModuleToJson } from './serialize.js';
export { splitModel, runSegments, SplitModelError, type SplitModelOptions } from './split-model.js';
export { runNodes, mapValues, subAt, attrAt } from './run-nodes.js';
