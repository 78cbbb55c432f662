import { describe, expect, it } from 'vitest';
import {
  getGradient,
  kernels,
  Registry,
  RegistryError,
  registerBackend,
  registerGradient,
  registerKernel,
  type GradientFn,
  type TensorKernel,
  traceable,
  traceables,
} from './index.js';

/** The one semantics every registry follows: same entry again is a no-op, another under a taken key throws, a miss lists. */
describe('one Registry semantics', () => {
  it('Registry options: `same` decides what "the same entry" is, the hints shape the messages', () => {
    const fn = () => 1;
    const r = new Registry<{ name: string; fn: () => number }>('widget', {
      same: (a, b) => a.fn === b.fn,
      howToRegister: 'addWidget(name, fn)',
      conflictHint: (key) => `rename the new '${key}'`,
    });
    const first = r.register({ name: 'w', fn });
    expect(r.register({ name: 'w', fn })).toBe(first); // a new record for the same function: the registered one
    expect(r.list()).toHaveLength(1);
    expect(() => r.register({ name: 'w', fn: () => 2 })).toThrow(
      "widget registry: another widget is already registered as 'w'; rename the new 'w'",
    );
    expect(() => r.get('v')).toThrow("no widget named 'v'; registered: w. Register it first with addWidget(name, fn).");
  });

  it('gradients: the same function for an op again is a no-op, another throws a RegistryError', () => {
    const grad: GradientFn = (_ctx, g) => g;
    registerGradient('test.registries.op', grad);
    registerGradient('test.registries.op', grad);
    expect(getGradient('test.registries.op')).toBe(grad);
    expect(getGradient('test.registries.none')).toBeUndefined();
    expect(() => registerGradient('test.registries.op', (_ctx, g) => g)).toThrow(RegistryError);
  });

  it('kernels are keyed by (op, backend): the same function again is a no-op, another on that backend throws', () => {
    registerBackend({ name: 'test-registries', priority: -1 });
    expect(() => registerBackend({ name: 'test-registries', priority: 5 })).toThrow(RegistryError);
    const fn: TensorKernel = (inputs) => inputs[0]!;
    registerKernel({ op: 'test.registries.k', backend: 'test-registries', fn });
    registerKernel({ op: 'test.registries.k', backend: 'test-registries', fn }); // a new spec object, same function
    expect(kernels.kernelOn('test.registries.k', 'test-registries')?.fn).toBe(fn);
    expect(kernels.kernelOn('test.registries.k', 'cpu')).toBeUndefined();
    expect(kernels.candidates('test.registries.k').map((k) => k.backend)).toEqual(['test-registries']);
    expect(kernels.listOps('test-registries')).toEqual(['test.registries.k']);
    expect(() => registerKernel({ op: 'test.registries.k', backend: 'test-registries', fn: (i) => i[0]! })).toThrow(
      /already registered as 'test.registries.k@test-registries'/,
    );
    expect(() => kernels.setBackendEnabled('no-such-backend', false)).toThrow(RegistryError);
    expect(() => kernels.setBackendEnabled('no-such-backend', false)).toThrow(/registered: .*cpu/);
  });

  it('traceable functions: the same function under its name again is a no-op, another throws', () => {
    const f = (x: number) => x + 1;
    const wrapped = traceable('testRegistriesF', f);
    expect(traceable('testRegistriesF', f)).toBe(wrapped);
    expect(traceables.lookup(f)?.name).toBe('testRegistriesF');
    expect(() => traceable('testRegistriesF', (x: number) => x)).toThrow(RegistryError);
    expect(() => traceables.get('testRegistriesNone')).toThrow(RegistryError);
  });
});
