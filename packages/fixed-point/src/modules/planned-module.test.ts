import { deepCopy, Module } from '@qtk/nn';
import { describe, expect, it } from 'vitest';
import { planRequantizeWide } from '../requantize.js';
import { FixedMul } from './fixed-mul.js';
import { PlannedModule } from './planned-module.js';

describe('PlannedModule', () => {
  it('keeps the config it is given, as a Module with no parameters or buffers of its own', () => {
    const config = {
      requant: planRequantizeWide(0.02 * 0.03, 0.05, 'qint8'),
      outScale: 0.05,
      outDtype: 'qint8' as const,
      scalars: [null, null] as const,
    };
    const m = new FixedMul(config);
    expect(m.config).toBe(config);
    expect(m).toBeInstanceOf(PlannedModule);
    expect(m).toBeInstanceOf(Module);
    expect(Object.keys(m.stateDict().tensors)).toEqual([]);
    expect(deepCopy(m).config).toEqual(config);
  });
});
