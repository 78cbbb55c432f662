import { describe, expect, it } from 'vitest';
import {
  add,
  containsTraced,
  RegistryError,
  relu,
  setTraceHook,
  tensor,
  traceable,
  traceables,
  TRACED,
  type TraceHook,
} from './index.js';

const traced = { [TRACED]: true };

describe('trace hook', () => {
  it('public ops run normally without a hook and hand traced calls to the hook', () => {
    expect(Array.from(add(tensor([1, 2]), 3).values())).toEqual([4, 5]);
    const calls: [string, unknown[]][] = [];
    const hook: TraceHook = (name, _fn, args) => {
      calls.push([name, args]);
      return 'recorded';
    };
    const prev = setTraceHook(hook);
    try {
      expect(add(traced as never, 1)).toBe('recorded');
      expect(relu([[traced]] as never)).toBe('recorded'); // found inside nested arrays
      expect(Array.from(relu(tensor([-1, 2])).values())).toEqual([0, 2]); // no traced argument: runs for real
    } finally {
      expect(setTraceHook(prev)).toBe(hook);
    }
    expect(calls.map(([n]) => n)).toEqual(['add', 'relu']);
  });

  it('finds traced values in arrays and plain objects only', () => {
    expect(containsTraced([1, { a: [traced] }])).toBe(true);
    expect(containsTraced({ a: 1, b: 'x' })).toBe(false);
    class Box {
      inner = traced;
    }
    expect(containsTraced([new Box()])).toBe(false);
  });

  it('registers each function once under a stable name', () => {
    expect(traceables.get('add').wrapped).toBe(add);
    expect(traceables.lookup(add)!.name).toBe('add');
    expect(traceables.lookup(traceables.get('add').fn)!.name).toBe('add');
    expect(traceable('add', add)).toBe(add);
    expect(() => traceable('add', (x: number) => x)).toThrow(RegistryError);
    expect(() => traceable('add', (x: number) => x)).toThrow(/already registered as 'add'/);
    expect(() => traceables.get('nope')).toThrow(
      /no traceable function named 'nope'; registered: .*conv2d.*Register it first with registerTraceable/,
    );
    expect(() => traceable('not a name', (x: number) => x)).toThrow(/identifier/);
    expect(traceables.get('randn').impure).toBe(true);
    expect(traceables.get('relu').impure).toBe(false);
  });
});
