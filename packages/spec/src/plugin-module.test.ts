import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PluginContractError } from './errors.js';
import type { ObserverFactoryV1 } from './observer.js';
import { registerPlugin, registerPluginModule } from './plugin-module.js';
import { observers } from './registries.js';
import { compareVersions, QTK_VERSION } from './version.js';

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

  it('names the QTK version a newer plugin needs, for a later contract or a later QTK', () => {
    expect(() => registerPlugin({ apiVersion: 2, name: 'future', requiresQtk: '3.0.0' } as never)).toThrow(
      `plugin 'future' is written for plugin contract version 2 (QTK 3.0.0 or later); this QTK (${QTK_VERSION}) implements version 1`,
    );
    const later = { apiVersion: 1 as const, name: 'later', requiresQtk: '99.0.0', observers: [factory] };
    expect(() => registerPlugin(later)).toThrow(
      `plugin 'later' needs QTK 99.0.0 or later; this is QTK ${QTK_VERSION}: upgrade the @qtk packages`,
    );
    // refused before anything is registered
    expect(observers.has('plugin_test_observer')).toBe(false);
    registerPlugin({ ...later, requiresQtk: QTK_VERSION });
    expect(observers.get('plugin_test_observer')).toBe(factory);
    observers.unregister('plugin_test_observer');
  });

  it('compareVersions orders major.minor.patch numerically', () => {
    expect(compareVersions('0.10.0', '0.9.3')).toBeGreaterThan(0);
    expect(compareVersions('1.0.0', '1.0.0-rc.1')).toBe(0);
    expect(compareVersions('0.2.0', '0.2.1')).toBeLessThan(0);
  });
});
