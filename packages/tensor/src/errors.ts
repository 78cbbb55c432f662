/** Global symbol, so two installed copies of a QTK package brand their errors alike. */
const QTK_ERROR_BRAND = Symbol.for('qtk.error');

/**
 * Root of every error QTK throws on purpose. Subclasses carry the context a user needs
 * (which tensor, which op, which node) and a message that says what to do next.
 */
export class QtkError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }

  /**
   * Like `instanceof`, but also true for an error from another copy of the package (two installed
   * versions): it checks the brand and, on a subclass that declares a static `code`, whether the
   * error's class or one of its ancestors declares that code (so `OnnxError.isInstance` accepts an
   * `OnnxLimitError`, `OnnxFormatError.isInstance` does not), or the error's own `code` is it.
   * A subclass without a static `code` falls back to `instanceof`.
   */
  static isInstance<T extends QtkError>(this: abstract new (...args: never[]) => T, e: unknown): e is T {
    if (typeof e !== 'object' || e === null || (e as { [QTK_ERROR_BRAND]?: unknown })[QTK_ERROR_BRAND] !== true)
      return false;
    // biome-ignore-start lint/complexity/noThisInStatic: `this` is the subclass isInstance was called on, not QtkError
    if ((this as unknown) === QtkError) return true;
    if (!Object.hasOwn(this, 'code')) return e instanceof this;
    const code = (this as unknown as { code: string }).code;
    if ((e as { code?: unknown }).code === code) return true;
    for (let p = Object.getPrototypeOf(e); p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      const cls = (p as { constructor?: unknown }).constructor;
      if (typeof cls === 'function' && Object.hasOwn(cls, 'code') && (cls as { code?: unknown }).code === code)
        return true;
    }
    return false;
    // biome-ignore-end lint/complexity/noThisInStatic: -
  }
}
// on the prototype, not the instance: no extra own property shows up in equality checks or logs
Object.defineProperty(QtkError.prototype, QTK_ERROR_BRAND, { value: true });

/** Shapes that cannot work together (broadcast, matmul, reshape, conv geometry, ...). */
export class ShapeError extends QtkError {
  static readonly code = 'E_SHAPE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_SHAPE', message, options);
  }
}

/** A tensor of the wrong dtype for an op. */
export class DTypeError extends QtkError {
  static readonly code = 'E_DTYPE';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_DTYPE', message, options);
  }
}

/** An argument outside what an op accepts (negative padding, unknown mode, ...). */
export class InvalidArgumentError extends QtkError {
  static readonly code = 'E_INVALID_ARGUMENT';
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_INVALID_ARGUMENT', message, options);
  }
}

/** No backend registered a kernel for an op (or none that accepts these inputs). */
export class KernelNotFoundError extends QtkError {
  static readonly code = 'E_KERNEL_NOT_FOUND';
  readonly op: string;
  constructor(op: string, available: string[]) {
    super(
      'E_KERNEL_NOT_FOUND',
      `no kernel for op '${op}' on any registered backend` +
        (available.length ? ` (backends with kernels for it: ${available.join(', ')}, none accepted the inputs)` : '') +
        `; register one with registerKernel({ op: '${op}', backend, fn }).`,
    );
    this.op = op;
  }
}

/** Autograd misuse: backward on a non-scalar without a gradient, on a tensor that needs no grad, ... */
export class AutogradError extends QtkError {
  static readonly code = 'E_AUTOGRAD';
  constructor(message: string) {
    super('E_AUTOGRAD', message);
  }
}

/** A registry lookup missed or a registration conflicts with another object under the same name. */
export class RegistryError extends QtkError {
  static readonly code = 'E_REGISTRY';
  readonly registry: string;
  readonly key: string;
  /** For a miss: registered names close to `key`, best first. */
  readonly suggestions: readonly string[];
  constructor(
    registry: string,
    key: string,
    message: string,
    options?: { cause?: unknown; suggestions?: readonly string[] },
  ) {
    super('E_REGISTRY', message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.registry = registry;
    this.key = key;
    this.suggestions = options?.suggestions ?? [];
  }
}

/** An op name the op catalog does not know (a capability table, a registration); names close ones. */
export class UnknownOpError extends QtkError {
  static readonly code = 'E_UNKNOWN_OP';
  readonly op: string;
  /** Catalog op names close to `op` (edit distance or case), best first. */
  readonly suggestions: readonly string[];
  constructor(op: string, suggestions: readonly string[], where: string) {
    super(
      'E_UNKNOWN_OP',
      `${where}: op '${op}' is not in QTK's op catalog` +
        (suggestions.length ? ` (close names: ${suggestions.join(', ')})` : '') +
        '; ops are named as in ONNX (listOps() lists them), or add a new op with defineOp() before naming it',
    );
    this.op = op;
    this.suggestions = suggestions;
  }
}
