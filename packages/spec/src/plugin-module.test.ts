import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PluginContractError } from './errors.js';
import type { ObserverFactoryV1 } from './observer.js';
import { registerPlugin, registerPluginModule } from './plugin-module.js';
import { observers } from './registries.js';

const factory: ObserverFactoryV1 = {
  apiVersion: 1,
  name: 'plugin_test_observer',
  optionsSchema: z.object({}),
  create: () => {
    throw new Error('not used');
  },
};

describe('plugins', () => {
  it('registerPlugin registers every listed entry, idempotently', () => {
    const plugin = { apiVersion: 1 as const, name: 'p', observers: [factory] };
    registerPlugin(plugin);
    registerPlugin(plugin);
    expect(observers.get('plugin_test_observer')).toBe(factory);
    observers.unregister('plugin_test_observer');
  });

  it('rejects what is not a plugin', async () => {
    expect(() => registerPlugin({ apiVersion: 2, name: 'x' } as never)).toThrow(PluginContractError);
    await expect(registerPluginModule('x', async () => ({}))).rejects.toThrow(/no 'qtkPlugin'/);
    await expect(
      registerPluginModule('missing-plugin', async () => {
        throw new Error('Cannot find module');
      }),
    ).rejects.toThrow(/cannot import plugin module 'missing-plugin'/);
    const viaDefault = await registerPluginModule('y', async () => ({ default: { apiVersion: 1, name: 'y' } }));
    expect(viaDefault.name).toBe('y');
  });
});
