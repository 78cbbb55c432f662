import { describe, expect, it } from 'vitest';
import { DTypeError, InvalidArgumentError, QtkError, ShapeError } from './errors.js';

/** An error made by another installed copy of @qtk/tensor: a different class, the same global brand and code. */
function fromOtherCopy(code: string): Error {
  class OtherCopyError extends Error {
    readonly code = code;
  }
  Object.defineProperty(OtherCopyError.prototype, Symbol.for('qtk.error'), { value: true });
  return new OtherCopyError('from the other copy');
}

describe('QtkError.isInstance', () => {
  it('recognises this copy’s errors and rejects non-QTK values', () => {
    expect(QtkError.isInstance(new ShapeError('bad shape'))).toBe(true);
    expect(QtkError.isInstance(new QtkError('E_X', 'x'))).toBe(true);
    expect(QtkError.isInstance(new Error('plain'))).toBe(false);
    expect(QtkError.isInstance(Object.assign(new Error('look-alike'), { code: 'E_SHAPE' }))).toBe(false);
    for (const v of [null, undefined, 'E_SHAPE', 42, {}]) expect(QtkError.isInstance(v)).toBe(false);
  });

  it('recognises an error from another copy of the package by its brand', () => {
    const e = fromOtherCopy('E_SHAPE');
    expect(e instanceof QtkError).toBe(false);
    expect(QtkError.isInstance(e)).toBe(true);
    expect(ShapeError.isInstance(e)).toBe(true);
    expect(DTypeError.isInstance(e)).toBe(false);
  });

  it('a subclass checks the error’s code as well as the brand', () => {
    expect(ShapeError.isInstance(new ShapeError('s'))).toBe(true);
    expect(ShapeError.isInstance(new DTypeError('d'))).toBe(false);
    expect(InvalidArgumentError.isInstance(new QtkError('E_INVALID_ARGUMENT', 'generic'))).toBe(true);
    expect(InvalidArgumentError.isInstance(new QtkError('E_SHAPE', 'generic'))).toBe(false);
  });

  it('a subclass with its own code is an instance of its parent, not of its sibling, also from another copy', () => {
    class ParentError extends QtkError {
      static readonly code: string = 'E_PARENT';
      constructor(message: string) {
        super((new.target as unknown as { code: string }).code, message);
      }
    }
    class AError extends ParentError {
      static override readonly code: string = 'E_A';
    }
    class BError extends ParentError {
      static override readonly code: string = 'E_B';
    }
    const a = new AError('a');
    expect([a.code, ParentError.isInstance(a), AError.isInstance(a), BError.isInstance(a)]).toEqual([
      'E_A',
      true,
      true,
      false,
    ]);
    // another copy: a parallel class chain declaring the same codes
    class OtherParent extends Error {
      static readonly code: string = 'E_PARENT';
    }
    Object.defineProperty(OtherParent.prototype, Symbol.for('qtk.error'), { value: true });
    class OtherA extends OtherParent {
      static override readonly code: string = 'E_A';
      readonly code = 'E_A';
    }
    const other = new OtherA('a');
    expect([ParentError.isInstance(other), AError.isInstance(other), BError.isInstance(other)]).toEqual([
      true,
      true,
      false,
    ]);
  });

  it('a subclass without a static code falls back to instanceof', () => {
    class CustomError extends QtkError {
      constructor() {
        super('E_CUSTOM', 'custom');
      }
    }
    expect(CustomError.isInstance(new CustomError())).toBe(true);
    expect(CustomError.isInstance(new ShapeError('s'))).toBe(false);
  });

  it('the brand is not an own property of the error', () => {
    const e = new ShapeError('s');
    expect(Object.getOwnPropertySymbols(e)).toEqual([]);
    expect(e).toEqual(new ShapeError('s'));
  });
});
