import { PluginContractError } from './errors.js';
import type { FakeQuantFactoryV1 } from './fake-quant.js';
import type { FusionPatternV1 } from './fusion-pattern.js';
import type { MarchBackendV1 } from './march-backend.js';
import type { ObserverFactoryV1 } from './observer.js';
import { fakeQuants, fusionPatterns, marches, observers } from './registries.js';
import { compareVersions, QTK_VERSION } from './version.js';

/** What a plugin package exports as `qtkPlugin` (or as its default export). */
export interface QtkPluginV1 {
  readonly apiVersion: 1;
  readonly name: string;
  /**
   * The oldest QTK version the plugin works with (`'0.2.0'`): an older QTK refuses it, naming the version. Give it
   * when the plugin uses something a later QTK added within the same contract version.
   */
  readonly requiresQtk?: string;
  readonly observers?: readonly ObserverFactoryV1[];
  readonly fakeQuants?: readonly FakeQuantFactoryV1[];
  readonly fusionPatterns?: readonly FusionPatternV1[];
  readonly marches?: readonly MarchBackendV1[];
}

/** Registers everything a plugin lists; registering the same plugin twice is a no-op. */
export function registerPlugin(plugin: QtkPluginV1): QtkPluginV1 {
  const declared = plugin as { apiVersion?: unknown; name?: unknown; requiresQtk?: unknown } | null | undefined;
  if (typeof declared?.name === 'string' && typeof declared.apiVersion === 'number' && declared.apiVersion > 1) {
    const needs = typeof declared.requiresQtk === 'string' ? ` (QTK ${declared.requiresQtk} or later)` : '';
    throw new PluginContractError(
      `plugin '${declared.name}' is written for plugin contract version ${declared.apiVersion}${needs}; this QTK (${QTK_VERSION}) implements version 1: upgrade the @qtk packages, or use a release of the plugin made for contract version 1`,
    );
  }
  if (plugin?.apiVersion !== 1 || typeof plugin.name !== 'string') {
    throw new PluginContractError(
      `not a QTK plugin (expected { apiVersion: 1, name, observers?, fakeQuants?, fusionPatterns?, marches? }, got ${String(plugin)})`,
    );
  }
  if (plugin.requiresQtk !== undefined && compareVersions(String(plugin.requiresQtk), QTK_VERSION) > 0) {
    throw new PluginContractError(
      `plugin '${plugin.name}' needs QTK ${plugin.requiresQtk} or later; this is QTK ${QTK_VERSION}: upgrade the @qtk packages (they share one version)`,
    );
  }
  for (const o of plugin.observers ?? []) observers.register(o);
  for (const f of plugin.fakeQuants ?? []) fakeQuants.register(f);
  for (const p of plugin.fusionPatterns ?? []) fusionPatterns.register(p);
  for (const m of plugin.marches ?? []) marches.register(m);
  return plugin;
}

/**
 * Imports a plugin package by module name (`'acme-qtk-observers'`) and registers its `qtkPlugin`
 * export (or default export). Pass `load = (s) => import(s)` from your own module so the name
 * resolves from where it is installed (your package), not from @qtk/spec's location.
 */
export async function registerPluginModule(
  specifier: string,
  load: (specifier: string) => Promise<unknown> = (s) => import(s),
): Promise<QtkPluginV1> {
  let mod: Record<string, unknown>;
  try {
    mod = (await load(specifier)) as Record<string, unknown>;
  } catch (cause) {
    throw new PluginContractError(`cannot import plugin module '${specifier}'; is it installed?`, { cause });
  }
  const plugin = (mod.qtkPlugin ?? mod.default) as QtkPluginV1 | undefined;
  if (!plugin) throw new PluginContractError(`module '${specifier}' has no 'qtkPlugin' (or default) export`);
  return registerPlugin(plugin);
}
