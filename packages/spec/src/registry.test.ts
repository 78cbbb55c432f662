import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PluginContractError, RegistryError } from './errors.js';
import { defineCapabilities, type MarchBackendV1 } from './march-backend.js';
import { marches, observers } from './registries.js';
import { Registry } from '@qtk/tensor';

describe('Registry', () => {
  it('registers, gets and lists in registration order', () => {
    const r = new Registry<{ name: string; v: number }>('thing');
    const a = { name: 'a', v: 1 };
    const b = { name: 'b', v: 2 };
    r.register(a);
    r.register(b);
    expect(r.get('a')).toBe(a);
    expect(r.list()).toEqual([a, b]);
    expect(r.names()).toEqual(['a', 'b']);
  });

  it('registering the same object twice is a no-op', () => {
    const r = new Registry<{ name: string }>('thing');
    const a = { name: 'a' };
    r.register(a);
    r.register(a);
    expect(r.list()).toHaveLength(1);
  });

  it('another object under a taken name throws', () => {
    const r = new Registry<{ name: string }>('thing');
    r.register({ name: 'a' });
    expect(() => r.register({ name: 'a' })).toThrow(RegistryError);
    expect(() => r.register({ name: 'a' })).toThrow(/already registered as 'a'/);
  });

  it('a miss lists what exists', () => {
    const r = new Registry<{ name: string }>('thing');
    r.register({ name: 'x' });
    r.register({ name: 'y' });
    expect(() => r.get('z')).toThrow("no thing named 'z'; registered: x, y");
    expect(() => new Registry('empty').get('q')).toThrow(/registered: none/);
  });

  it('a miss suggests close names instead of "register it first"', () => {
    const r = new Registry<{ name: string }>('thing', { howToRegister: 'addThing()' });
    r.register({ name: 'min_max' });
    r.register({ name: 'mse' });
    const e = (() => {
      try {
        r.get('msee');
      } catch (err) {
        return err as RegistryError;
      }
    })()!;
    expect(e.message).toBe("no thing named 'msee'; registered: min_max, mse. Did you mean 'mse'?");
    expect(e.suggestions).toEqual(['mse']);
    expect(() => r.get('kl')).toThrow(
      "no thing named 'kl'; registered: min_max, mse. Register it first with addThing().",
    );
  });

  it('a case-insensitive registry finds a name in any case, and refuses a key differing only in case', () => {
    const r = new Registry<{ name: string }>('thing', { caseInsensitive: true });
    const mse = r.register({ name: 'mse' });
    expect(r.get('MSE')).toBe(mse);
    expect(r.has('Mse')).toBe(true);
    expect(r.resolve('MSE')).toBe('mse');
    expect(() => r.register({ name: 'MSE' })).toThrow("another thing is already registered as 'mse'");
    const plain = new Registry<{ name: string }>('thing');
    plain.register({ name: 'a' });
    expect(plain.has('A')).toBe(false);
  });

  it('rejects entries without a name', () => {
    const r = new Registry<{ name: string }>('thing');
    expect(() => r.register({ name: '' })).toThrow(RegistryError);
  });
});

describe('built-in registries', () => {
  it('observers checks the contract', () => {
    expect(() =>
      observers.register({ apiVersion: 2, name: 'bad', optionsSchema: z.object({}), create: () => null } as never),
    ).toThrow(PluginContractError);
    expect(() =>
      observers.register({ apiVersion: 1, name: 'bad2', optionsSchema: {}, create: () => null } as never),
    ).toThrow(/zod schema/);
    expect(observers.has('bad')).toBe(false);
  });

  it('observer names are case-insensitive', () => {
    const obs = { apiVersion: 1, name: 'test_case_obs', optionsSchema: z.object({}), create: () => null } as never;
    observers.register(obs);
    try {
      expect(observers.get('TEST_Case_Obs')).toBe(obs);
    } finally {
      observers.unregister('test_case_obs');
    }
  });

  it('a missing march says which package to import', () => {
    expect(() => marches.get('test_no_such_march')).toThrow(
      "no march named 'test_no_such_march'; registered: " +
        `${marches.names().join(', ') || 'none'}. A march registers when its package is imported: import '@qtk/march-test_no_such_march' for one of QTK's marches`,
    );
  });

  it('marches are keyed by id and their tables are validated', () => {
    const m: MarchBackendV1 = {
      apiVersion: 1,
      id: 'test_march_reg',
      capabilities: defineCapabilities({
        version: 1,
        activationDtypes: ['qint8'],
        weightDtypes: ['qint8'],
        weightPerChannel: true,
        ops: [{ op: 'Conv' }],
      }),
      hooks: {},
    };
    marches.register(m);
    expect(marches.get('test_march_reg')).toBe(m);
    marches.unregister('test_march_reg');
    const bad = {
      ...m,
      capabilities: { ...m.capabilities, ops: [{ op: 'Conv' }, { op: 'Conv' }] },
    } as unknown as MarchBackendV1;
    expect(() => marches.register(bad)).toThrow(/listed twice/);
  });
});
