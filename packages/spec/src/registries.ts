import { checkTableOps } from './capability-ops.js';
import { PluginContractError } from './errors.js';
import type { FakeQuantFactoryV1 } from './fake-quant.js';
import type { FusionPatternV1 } from './fusion-pattern.js';
import { capabilityTableSchema, type MarchBackendV1 } from './march-backend.js';
import type { ObserverFactoryV1 } from './observer.js';
import { Registry } from '@qtk/tensor';
import { validatePattern } from '@qtk/ir';

function requireApi(kind: string, entry: object, methods: string[]): void {
  const e = entry as Record<string, unknown>;
  const label = `${kind} '${String(e.name ?? e.id)}'`;
  if (e.apiVersion !== 1) {
    throw new PluginContractError(
      `${label}: apiVersion ${String(e.apiVersion)} is not supported by this @qtk/spec (it speaks apiVersion 1)`,
    );
  }
  for (const m of methods) {
    if (typeof e[m] !== 'function')
      throw new PluginContractError(`${label}: missing method ${m}() required by ${kind}V1`);
  }
}

/** Observer factories by name ('min_max', 'percentile', ...); lookups ignore case ('MSE' finds 'mse'). */
export const observers = new Registry<ObserverFactoryV1>('observer', {
  caseInsensitive: true,
  howToRegister: 'registerPlugin() or observers.register()',
  check: (f) => {
    requireApi('observer', f, ['create']);
    if (!f.optionsSchema || typeof (f.optionsSchema as { safeParse?: unknown }).safeParse !== 'function') {
      throw new PluginContractError(`observer '${f.name}': optionsSchema must be a zod schema`);
    }
  },
});

/** Fake-quant factories by name. */
export const fakeQuants = new Registry<FakeQuantFactoryV1>('fake-quant', {
  check: (f) => requireApi('fake-quant', f, ['create']),
});

/** Fusion patterns by name; the fusion pass applies them longest pattern first. */
export const fusionPatterns = new Registry<FusionPatternV1>('fusion pattern', {
  check: (p) => {
    requireApi('fusion pattern', p, ['createFused']);
    validatePattern(p.pattern, `fusion pattern '${p.name}'`);
  },
});

/** March backends by id. */
export const marches = new Registry<MarchBackendV1>('march', {
  keyOf: (m) => m.id,
  // QTK's own marches register when their package is imported; this package names none of them.
  missHint: (id) =>
    `A march registers when its package is imported: import '@qtk/march-${id}' for one of QTK's marches, ` +
    'or load a third-party march with registerPlugin() / registerPluginModule().',
  check: (m) => {
    requireApi('march', m, []);
    const r = capabilityTableSchema.safeParse(m.capabilities);
    if (!r.success) {
      throw new PluginContractError(
        `march '${m.id}': invalid capability table: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
        { cause: r.error },
      );
    }
    checkTableOps(r.data.ops, `march '${m.id}': capability table`);
    if (!m.hooks || typeof m.hooks !== 'object')
      throw new PluginContractError(`march '${m.id}': hooks must be an object (may be empty)`);
    for (const k of ['prepareRewrites', 'preparePasses'] as const) {
      const list = m.hooks[k];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.some((p) => typeof p?.name !== 'string' || typeof p.run !== 'function'))
        throw new PluginContractError(`march '${m.id}': hooks.${k} must be an array of { name, run(...) }`);
    }
  },
});

/** Creates a registered observer by name, options validated by its schema. */
export function createObserver(name: string, options?: unknown) {
  return observers.get(name).create(options);
}
