import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Conv2d, init, Linear } from './index.js';

describe('init.skipInit', () => {
  it('leaves Linear and Conv weights and biases at zero and draws nothing from the generator', () => {
    const g = new Generator(7);
    const skipped = init.skipInit(() => [new Linear(3, 2, { generator: g }), new Conv2d(2, 4, 3, { generator: g })]);
    for (const m of skipped)
      for (const p of m.parameters()) expect(Array.from(p.values()).every((v) => v === 0)).toBe(true);
    // the same generator then gives what a fresh one gives: nothing was drawn
    const after = new Linear(3, 2, { generator: g });
    const fresh = new Linear(3, 2, { generator: new Generator(7) });
    expect(Array.from(after.weight.values())).toEqual(Array.from(fresh.weight.values()));
    expect(after.weight.values().some((v) => v !== 0)).toBe(true);
  });

  it('is undone after make returns or throws', () => {
    expect(() =>
      init.skipInit(() => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
    expect(new Linear(4, 4, { generator: new Generator(1) }).weight.values().some((v) => v !== 0)).toBe(true);
  });
});
