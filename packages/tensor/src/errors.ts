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
}

/** Shapes that cannot work together (broadcast, matmul, reshape, conv geometry, ...). */
export class ShapeError extends QtkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_SHAPE', message, options);
  }
}

/** A tensor of the wrong dtype for an op. */
export class DTypeError extends QtkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_DTYPE', message, options);
  }
}

/** An argument outside what an op accepts (negative padding, unknown mode, ...). */
export class InvalidArgumentError extends QtkError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('E_INVALID_ARGUMENT', message, options);
  }
}

/** No backend registered a kernel for an op (or none that accepts these inputs). */
export class KernelNotFoundError extends QtkError {
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
  constructor(message: string) {
    super('E_AUTOGRAD', message);
  }
}
