import { describe, expect, it } from 'vitest';
import { QConfigError, QtkError, UnsupportedOpError } from './errors.js';

describe('UnsupportedOpError', () => {
  it('keeps the reason as a field, not only in the message', () => {
    const e = new UnsupportedOpError({
      op: 'Conv3d',
      node: 'conv3d',
      march: 'bernoulli2',
      reason: 'kernel (3, 3, 3) is not 2-d',
    });
    expect(e.reason).toBe('kernel (3, 3, 3) is not 2-d');
    expect(e.message).toContain("at node 'conv3d' (kernel (3, 3, 3) is not 2-d);");
    expect(new UnsupportedOpError({ op: 'Conv3d', node: 'conv3d', march: 'bernoulli2' }).reason).toBeNull();
  });

  it('isInstance recognises one from another package copy by brand and code', () => {
    class OtherCopyError extends Error {
      readonly code = 'E_UNSUPPORTED_OP';
    }
    Object.defineProperty(OtherCopyError.prototype, Symbol.for('qtk.error'), { value: true });
    const e = new OtherCopyError('other copy');
    expect(UnsupportedOpError.isInstance(e)).toBe(true);
    expect(QtkError.isInstance(e)).toBe(true);
    expect(QConfigError.isInstance(e)).toBe(false);
    expect(UnsupportedOpError.isInstance(new QConfigError('q'))).toBe(false);
  });
});
