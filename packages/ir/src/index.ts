export {
  TraceError,
  GraphError,
  GraphValidationError,
  SerializationError,
  ModuleConfigError,
  PatternError,
  type TraceErrorContext,
} from './errors.js';
export { Node, mapArg, forEachNode, OPCODES, type Opcode, type Argument } from './node.js';
export { IMPORTED_NAMES, importedNamesOf } from './imported-names.js';
export { Graph, sanitizeName, type CreateNodeOptions } from './graph.js';
export { formatArgument, formatArgs, formatTarget, formatTable, tabulateNodes } from './format.js';
export {
  leafModules,
  registerLeafModule,
  registerTracedMethods,
  tracedMethodsOf,
  LeafModuleRegistry,
  type ModuleClass,
} from './leaf-modules.js';
export { Tracer, traceGraph, getattr, getitem, type TraceOptions, type TraceResult } from './tracer.js';
export { fxWrap, fxWrapMethod, type FxWrapOptions } from './fx-wrap.js';
export { GraphModule, SubmoduleContainer, type GraphModuleOptions } from './graph-module.js';
export { findSubmodule } from './find-submodule.js';
export { compileGraph, type CompiledGraph, type ModuleResolver } from './compile.js';
export { symbolicTrace, registerTraceable } from './symbolic-trace.js';
export { parseParams, type ParamInfo } from './signature.js';
export {
  MatchAll,
  AnyOf,
  SubclassOf,
  anyOf,
  subclassOf,
  matchPattern,
  elementMatches,
  patternSize,
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
export {
  moduleCodecs,
  ModuleCodecRegistry,
  CONFIG_LIMITS,
  type ModuleCodec,
  type BuildPlace,
  type CodecTensor,
  type JsonValue,
} from './module-codecs.js';
export {
  serializeGraphModule,
  deserializeGraphModule,
  graphModuleToJson,
  GRAPH_MODULE_FORMAT,
  GRAPH_MODULE_VERSION,
  type SerializedGraphModule,
  type SerializedModule,
  type SerializedNode,
  type SerializedTensor,
  type DeserializeOptions,
} from './serialize.js';
export {
  splitModel,
  runSegments,
  SplitModelError,
  type SplitModelOptions,
  type SegmentInfo,
} from './split-model.js';
export { runNodes, mapValues, subAt, attrAt, type RunNodesOptions } from './run-nodes.js';
