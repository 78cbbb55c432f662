import { QtkError, RegistryError, UnknownOpError } from '@qtk/tensor';

export { QtkError, RegistryError, UnknownOpError };

/** An op the chosen march cannot run (and hybrid mode does not keep on the CPU). */
export class UnsupportedOpError extends QtkError {
  static readonly code = 'E_UNSUPPORTED_OP';
  readonly op: string;
  readonly node: string;
  readonly march: string;
  /** Why the march cannot run it (the constructor's `reason`), or null when none was given. */
  readonly reason: string | null;
  constructor(context: { op: string; node: string; march: string; reason?: string }, options?: { cause?: unknown }) {
    super(
      'E_UNSUPPORTED_OP',
      `march '${context.march}' does not support op '${context.op}' at node '${context.node}'` +
        (context.reason ? ` (${context.reason})` : '') +
        '; keep it on the CPU with hybrid mode, replace the op, or choose a march whose capability table lists it.',
      options,
    );
    this.op = context.op;
    this.node = context.node;
    this.march = context.march;
    this.reason = context.reason ?? null;
  }
}

/** A qconfig that cannot be honoured (qint16 on an int8-only march, per-channel activations, ...); raised when applied. */
export class QConfigError extends QtkError {
  static readonly code: string = 'E_QCONFIG';
  /** Qualified name of the module the qconfig was applied to, when known. */
  readonly module: string | null;
  constructor(message: string, options?: { cause?: unknown; module?: string }) {
    super(
      (new.target as unknown as { code: string }).code,
      options?.module !== undefined ? `qconfig of module '${options.module}': ${message}` : message,
      options,
    );
    this.module = options?.module ?? null;
  }
}

/** Options that fail their zod schema; `issues` holds each failing path and message. */
export class OptionsError extends QtkError {
  static readonly code = 'E_OPTIONS';
  readonly where: string;
  readonly issues: readonly { path: string; message: string }[];
  constructor(where: string, issues: readonly { path: string; message: string }[], options?: { cause?: unknown }) {
    super(
      'E_OPTIONS',
      `invalid options for ${where}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`,
      options,
    );
    this.where = where;
    this.issues = issues;
  }
}

/** A serialized state (observer, fake-quant, checkpoint) of an unknown version or the wrong kind. */
export class StateVersionError extends QtkError {
  static readonly code = 'E_STATE_VERSION';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_STATE_VERSION', message, options);
  }
}

/** A plugin object that does not satisfy its contract (missing method, wrong apiVersion, ...). */
export class PluginContractError extends QtkError {
  static readonly code = 'E_PLUGIN_CONTRACT';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_PLUGIN_CONTRACT', message, options);
  }
}

/** Asking an observer for qparams before it has seen any data. */
export class ObserverStateError extends QtkError {
  static readonly code = 'E_OBSERVER_STATE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_OBSERVER_STATE', message, options);
  }
}
