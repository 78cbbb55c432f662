import { deepCopy, Sequential } from '@qtk/nn';
import { Generator, randn, tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { FakeQuantize } from './index.js';

// CALIBRATION defers the scale update to the next read of the scale; every way of reading it must see the
// value an update after every batch would have left.

/** A calibrating mse fake-quant (a histogram search per update) and the batches it saw. */
function calibrated(batches = 4) {
  const gen = new Generator(5);
  const fq = new FakeQuantize({ state: 'CALIBRATION', observer: 'mse' });
  const xs = Array.from({ length: batches }, (_, i) => randn([256], { generator: gen }).mul(tensor(1 + i)));
  for (const x of xs) fq.forward(x);
  return { fq, xs };
}

/** The scale an eager fake-quant (one that updates after every batch, as in QAT) reaches on the same batches. */
function eagerScale(xs: ReturnType<typeof calibrated>['xs']): number {
  const fq = new FakeQuantize({ state: 'QAT', observer: 'mse' });
  for (const x of xs) fq.forward(x);
  return fq.scale.values()[0]!;
}

describe('FakeQuantize: the scale update deferred during CALIBRATION', () => {
  it('searches once when the scale is read, not after every batch', () => {
    const { fq } = calibrated();
    let searches = 0;
    const compute = fq.observer.computeQparams.bind(fq.observer);
    fq.observer.computeQparams = () => {
      searches++;
      return compute();
    };
    fq.forward(randn([256], { generator: new Generator(9) }));
    fq.forward(randn([256], { generator: new Generator(10) }));
    expect(searches).toBe(0);
    fq.scale.values();
    fq.scale.values();
    expect(searches).toBe(1);
  });

  it('fq.scale, calculateQparams, the state dict and the VALIDATION forward all see the up-to-date scale', () => {
    const { fq, xs } = calibrated();
    const expected = eagerScale(xs);
    expect(expected).not.toBe(1);
    expect(fq.scale.values()[0]).toBe(expected);
    const a = calibrated();
    expect(a.fq.calculateQparams().scale[0]).toBe(expected);
    const b = calibrated();
    expect(new Sequential(b.fq).stateDict().tensors['0.scale']!.values()[0]).toBe(expected);
    const c = calibrated();
    c.fq.setFakeQuantState('VALIDATION');
    const y = c.fq.forward(tensor([1000]));
    expect(y.values()[0]).toBe(Math.fround(127 * expected));
  });

  it('a deep copy taken while the update is pending gets its own, up-to-date scale', () => {
    const { fq, xs } = calibrated();
    const copy = deepCopy(new Sequential(fq)).getChild('0') as FakeQuantize;
    expect(copy.scale).not.toBe(fq.scale);
    expect(copy.scale.values()[0]).toBe(eagerScale(xs));
    // more data for the copy only: the original keeps its own scale
    copy.forward(tensor([50, -50]));
    expect(copy.scale.values()[0]).toBe(eagerScale([...xs, tensor([50, -50])]));
    expect(fq.scale.values()[0]).toBe(eagerScale(xs));
  });
});
