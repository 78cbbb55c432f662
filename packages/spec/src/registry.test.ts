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
