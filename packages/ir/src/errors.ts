import { QtkError } from '@qtk/tensor';

export interface TraceErrorContext {
  /** Qualified path of the module whose forward was being traced ('' is the root). */
  modulePath: string;
  /** Class of that module. */
  moduleType: string;
  /** `file:line:column` of the offending user code, when the stack shows it. */
  location: string | null;
}

/**
 * Symbolic tracing hit code it cannot record: a traced value used as a JS primitive (a branch, a
 * comparison, `Number(x)`, a template string, `+`), or a module or value it cannot address.
 */
export class TraceError extends QtkError {
  static readonly code = 'E_TRACE';
  readonly modulePath: string;
  readonly moduleType: string;
  readonly location: string | null;

  constructor(problem: string, context: TraceErrorContext, options?: { cause?: unknown; hint?: string }) {
    const where = `${context.modulePath === '' ? 'the root module' : `module '${context.modulePath}'`} (${context.moduleType})`;
    const at = context.location ? ` at ${context.location}` : '';
    const hint =
      options?.hint ??
      'Move the data-dependent code into a function wrapped with fxWrap(fn) (or a method decorated with @fxWrap()), ' +
        'which is recorded as one opaque call and runs for real, or pass the deciding value in concreteArgs.';
    super('E_TRACE', `symbolic trace of ${where}${at}: ${problem}. ${hint}`, options);
    this.modulePath = context.modulePath;
    this.moduleType = context.moduleType;
    this.location = context.location;
  }
}

/** A graph edit that would break the graph (erasing a node still in use, a node of another graph, ...). */
export class GraphError extends QtkError {
  static readonly code = 'E_GRAPH';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_GRAPH', message, options);
  }
}

/** `graph.validate()` found a broken invariant; `problems` lists every one found. */
export class GraphValidationError extends QtkError {
  static readonly code = 'E_GRAPH_INVALID';
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      'E_GRAPH_INVALID',
      `invalid graph (${problems.length} problem${problems.length === 1 ? '' : 's'}): ${problems.join('; ')}`,
    );
    this.problems = problems;
  }
}

/** A serialized graph module that cannot be written or read back (unknown version, unserializable value, missing module type). */
export class SerializationError extends QtkError {
  static readonly code: string = 'E_IR_SERIALIZATION';
  constructor(message: string, options?: { cause?: unknown }) {
    // a subclass (ModuleConfigError, core's ModelFileError) passes its own static code
    super((new.target as unknown as { code: string }).code, message, options);
  }
}

/**
 * A module's stored codec config fails its codec's schema (a damaged or hand-edited file): names the
 * module path, the codec and the config field, so the file is refused at load, not at first run.
 */
export class ModuleConfigError extends SerializationError {
  static override readonly code: string = 'E_MODULE_CONFIG';
  readonly modulePath: string | undefined;
  readonly codec: string;
  readonly field: string;
  readonly problem: string;
  constructor(
    modulePath: string | undefined,
    codec: string,
    field: string,
    problem: string,
    options?: { cause?: unknown },
  ) {
    const where = modulePath === undefined ? `a ${codec}` : `module '${modulePath}' (${codec})`;
    super(
      `${where}: bad config field '${field}': ${problem}; the file is damaged or was written by incompatible code: re-save the model`,
      options,
    );
    this.modulePath = modulePath;
    this.codec = codec;
    this.field = field;
    this.problem = problem;
  }
}

/** A malformed pattern or rewrite rule. */
export class PatternError extends QtkError {
  static readonly code = 'E_PATTERN';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_PATTERN', message, options);
  }
}
