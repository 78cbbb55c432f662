import type { QConfig } from '@qtk/fake-quant';
import type { Module } from '@qtk/nn';
import { QConfigError } from '@qtk/spec';
import { findSubmodule } from '@qtk/ir';

// biome-ignore lint/suspicious/noExplicitAny: a constructor type that accepts every subclass, whatever its constructor parameters
type ModuleClass = abstract new (...args: any[]) => Module;

/**
 * Which qconfig applies where (horizon_plugin_pytorch's qconfig_dict, camelCase). Precedence, lowest first:
 * `global` < `moduleType` < `moduleName` < a module's own `qconfig` property; a name or an own
 * qconfig covers the module's children too. null means "not quantized".
 */
export interface QConfigDict {
  global?: QConfig | null;
  /** [class, qconfig] pairs; a module matches its class or a superclass. */
  moduleType?: readonly (readonly [ModuleClass, QConfig | null])[];
  /**
   * Qualified module name ('layer1.conv1') → qconfig: a record, or [name, qconfig] pairs in order (the form of
   * horizon_plugin_pytorch's and PyTorch's `module_name` list; a later pair for the same name wins).
   */
  moduleName?: Readonly<Record<string, QConfig | null>> | readonly (readonly [string, QConfig | null])[];
}

/** The `moduleName` entries of a qconfig dict as a record, whichever form it was given in (unchecked). */
export function moduleNameRecord(dict: QConfigDict): Record<string, QConfig | null> {
  const m = dict.moduleName;
  if (!m) return {};
  return Array.isArray(m) ? Object.fromEntries(m) : { ...(m as Readonly<Record<string, QConfig | null>>) };
}

/** Whether a value is a QConfig ({ activation, weight }). */
export function isQConfig(q: unknown): q is QConfig {
  return q !== null && typeof q === 'object' && 'activation' in q && 'weight' in q;
}

/** Validates a qconfig dict at the boundary. */
export function checkQconfigDict(dict: QConfigDict): void {
  if (dict === null || typeof dict !== 'object')
    throw new QConfigError('prepareQatFx: qconfigDict must be an object { global, moduleType, moduleName }');
  const known = new Set(['global', 'moduleType', 'moduleName']);
  for (const k of Object.keys(dict)) {
    if (!known.has(k))
      throw new QConfigError(`qconfigDict: unknown key '${k}' (expected global, moduleType, moduleName)`);
  }
  if (dict.global !== undefined && dict.global !== null && !isQConfig(dict.global))
    throw new QConfigError('qconfigDict.global must be a QConfig or null');
  for (const [i, e] of (dict.moduleType ?? []).entries()) {
    if (!Array.isArray(e) || typeof e[0] !== 'function' || (e[1] !== null && !isQConfig(e[1]))) {
      throw new QConfigError(`qconfigDict.moduleType[${i}] must be [ModuleClass, QConfig | null]`);
    }
  }
  if (Array.isArray(dict.moduleName)) {
    for (const [i, e] of dict.moduleName.entries()) {
      if (!Array.isArray(e) || e.length !== 2 || typeof e[0] !== 'string' || (e[1] !== null && !isQConfig(e[1])))
        throw new QConfigError(
          `qconfigDict.moduleName[${i}] must be a [name, QConfig | null] pair, as in moduleName: [['conv1', qconfig]]`,
        );
    }
    return;
  }
  for (const [name, q] of Object.entries(dict.moduleName ?? {})) {
    if (q !== null && !isQConfig(q))
      throw new QConfigError(`qconfigDict.moduleName['${name}'] must be a QConfig or null`);
  }
}

/**
 * Resolves qconfigs by module path. From the module up to the root, the first level with an own
 * `qconfig` property or a `moduleName` entry decides (own property first at each level, so the
 * nearer, more specific setting wins and a parent's name covers its children, as torch's
 * module-name prefixes do); without one, a `moduleType` match of the module; else `global`.
 */
export class QconfigResolver {
  private readonly byName: Readonly<Record<string, QConfig | null>>;

  constructor(
    private readonly root: Module,
    private readonly dict: QConfigDict,
  ) {
    checkQconfigDict(dict);
    this.byName = moduleNameRecord(dict);
  }

  /** The qconfig of the module at `path` ('' = root). `typeHints` are extra modules whose types match (a fused module's conv). */
  resolve(path: string, typeHints: readonly Module[] = []): QConfig | null {
    const parts = path === '' ? [] : path.split('.');
    for (let k = parts.length; k >= 0; k--) {
      const set = this.explicit(parts.slice(0, k).join('.'));
      if (set !== undefined) return set;
    }
    const module = this.moduleAt(path);
    let q: QConfig | null = this.dict.global ?? null;
    for (const [cls, qc] of this.dict.moduleType ?? []) {
      if ((module && module instanceof cls) || typeHints.some((m) => m instanceof cls)) q = qc;
    }
    return q;
  }

  /**
   * The qconfig set for exactly this path, not inherited: the module's own `qconfig` property, else
   * a `moduleName` entry; undefined when neither exists (null is "not quantized").
   */
  explicit(path: string): QConfig | null | undefined {
    const m = this.moduleAt(path);
    const own = m ? (m as unknown as { qconfig?: QConfig | null }).qconfig : undefined;
    if (own !== undefined) {
      if (own !== null && !isQConfig(own))
        throw new QConfigError('module.qconfig must be a QConfig or null', { module: path || '<root>' });
      return own;
    }
    if (Object.hasOwn(this.byName, path)) return this.byName[path]!;
    return undefined;
  }

  private moduleAt(path: string): Module | null {
    return findSubmodule(this.root, path);
  }
}
