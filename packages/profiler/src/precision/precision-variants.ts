// Precision variants of one model: the all-int8 baseline with some nodes at int16, some float (a null
// qconfig, or the CPU through hybridDict in hybrid mode), or one node alone quantized. Each variant is
// prepared from the float model and calibrated on the same batches (starting from the baseline's
// statistics where a fake-quant is unchanged), so variants differ only where asked.
import {
  calibrate,
  convertFx,
  deployDeviceOf,
  FLOAT_STEP,
  type HybridDict,
  moduleNameRecord,
  moduleOf,
  type PrepareQatFxOptions,
  prepareQatFx,
  QatModule,
  type QConfigDict,
  setFakeQuantize,
} from '@qtk/core';
import { FakeQuantize, getDefaultQconfig, type QConfig, qconfig, withArgs } from '@qtk/fake-quant';
import type { GraphModule, Node } from '@qtk/ir';
import { DeQuantStub, type Module, QuantStub } from '@qtk/nn';
import { marches } from '@qtk/spec';
import { InvalidArgumentError, type Tensor } from '@qtk/tensor';

/** What a variant changes against the all-int8 baseline. */
export interface PrecisionChange {
  /** Nodes (module paths of the prepared model) with int16 activations. */
  readonly int16?: readonly string[];
  /** Nodes kept float: a null qconfig, or on the CPU through hybridDict in hybrid mode. */
  readonly float?: readonly string[];
  /** The only quantized node; every other node stays float. */
  readonly alone?: string;
}

export interface VariantSetup {
  readonly march: string;
  /** Calibration batches (each one tensor or the model's argument list). */
  readonly calib: readonly (Tensor | readonly Tensor[])[];
  /** The all-int8 baseline (default: min-max activations per tensor, min-max weights per channel). */
  readonly qconfigDict?: QConfigDict;
  /** More prepare options: hybrid mode, a base hybridDict, passes. */
  readonly prepare?: Omit<PrepareQatFxOptions, 'march'>;
  /** Measure the converted fixed-point model ('fixed') or the calibrated fake-quant one ('fake', default). */
  readonly stage?: 'fake' | 'fixed';
  /**
   * Start each variant's unchanged fake-quants from the all-int8 baseline's calibration statistics, so
   * only the changed ones observe (default true; the result is the same, the observers' work is saved).
   */
  readonly reuseCalibration?: boolean;
}

/** A quantizable node of the baseline: a QAT module or a functional op with its own output fake-quant. */
export interface QuantizableNode {
  /** The module path, as qconfig dict `moduleName` and hybridDict `moduleName` take it. */
  readonly name: string;
  /** The class of the float (or fused) module it runs. */
  readonly type: string;
  /** The qconfig the node got in the baseline, rebuilt from its fake-quants. */
  readonly qconfig: QConfig;
  /** Whether the node has an activation fake-quant of its own (else int16 changes nothing). */
  readonly hasActivation: boolean;
}

export const defaultBaselineDict = (): QConfigDict => ({
  global: getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max'),
});

/** Whether `march` has int16 activations. */
export function marchHasInt16(march: string): boolean {
  return marches.get(march).capabilities.activationDtypes.includes('qint16');
}

/** The registered marches with int16 activations, for messages. */
export function int16Marches(): string {
  const ids = marches
    .list()
    .filter((m) => m.capabilities.activationDtypes.includes('qint16'))
    .map((m) => m.id);
  return ids.length ? ids.join(', ') : 'none is registered';
}

const factoryOf = (fq: FakeQuantize | null, dtype?: 'qint16') =>
  fq ? withArgs({ ...fq.options, ...(dtype ? { dtype, quantMin: null, quantMax: null } : {}) }) : null;

/** The activation fake-quant a node's output passes: its QAT module's, or the generated one right after it. */
function activationFakeQuantOf(gm: GraphModule, node: Node): FakeQuantize | null {
  const m = moduleOf(gm, node);
  if (m instanceof QatModule) return m.activationPostProcess;
  for (const u of node.users) {
    const um = moduleOf(gm, u);
    if (um instanceof FakeQuantize && u.target.startsWith('_generated_')) return um;
  }
  return null;
}

/** The quantizable nodes of a prepared baseline, in execution order (stubs and fake-quants excluded). */
export function quantizableNodes(baseline: GraphModule): QuantizableNode[] {
  const out: QuantizableNode[] = [];
  const seen = new Set<string>();
  for (const node of baseline.graph.nodes) {
    if (node.op !== 'call_module' || seen.has(node.target)) continue;
    const m = moduleOf(baseline, node);
    if (!m || m instanceof FakeQuantize) continue;
    const inner = m instanceof QatModule ? m.module : m;
    if (inner instanceof DeQuantStub) continue;
    const act = activationFakeQuantOf(baseline, node);
    const weight = m instanceof QatModule ? m.weightFakeQuant : null;
    if (!act && !weight && !(m instanceof QatModule)) continue;
    if (inner instanceof QuantStub && !act) continue;
    seen.add(node.target);
    out.push({
      name: node.target,
      type: inner.constructor.name,
      qconfig: qconfig(factoryOf(act), factoryOf(weight)),
      hasActivation: act !== null,
    });
  }
  return out;
}

const int16Of = (n: QuantizableNode, baseline: GraphModule): QConfig => {
  const node = baseline.graph.nodes.find((x) => x.op === 'call_module' && x.target === n.name)!;
  const m = moduleOf(baseline, node);
  return qconfig(
    factoryOf(activationFakeQuantOf(baseline, node), 'qint16'),
    factoryOf(m instanceof QatModule ? m.weightFakeQuant : null),
  );
};

/** The qconfig dict and prepare options of a variant. */
export function variantConfig(
  setup: VariantSetup,
  baseline: GraphModule | null,
  nodes: readonly QuantizableNode[],
  change: PrecisionChange,
): { qconfigDict: QConfigDict; prepare: PrepareQatFxOptions } {
  const base = setup.qconfigDict ?? defaultBaselineDict();
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const need = (name: string): QuantizableNode => {
    const n = byName.get(name);
    if (!n)
      throw new InvalidArgumentError(
        `precision variant: '${name}' is not a quantizable node of the prepared model; use one of ${[...byName.keys()].join(', ')}`,
      );
    return n;
  };
  const hybrid = setup.prepare?.hybrid === true;
  const moduleName: Record<string, QConfig | null> = moduleNameRecord(base);
  let dict: QConfigDict = { ...base, moduleName };
  if (change.alone !== undefined) {
    const only = need(change.alone);
    // the input QuantStubs stay quantized: a converted model needs its inputs quantized somewhere
    const stubs = nodes.filter((n) => n.type === 'QuantStub').map((n) => [n.name, n.qconfig] as const);
    dict = { global: null, moduleName: { ...Object.fromEntries(stubs), [only.name]: only.qconfig } };
  }
  for (const name of change.int16 ?? []) moduleName[name] = int16Of(need(name), baseline!);
  const cpu: string[] = [];
  for (const name of change.float ?? []) {
    need(name);
    if (hybrid) cpu.push(name);
    else moduleName[name] = null;
  }
  const baseHybrid = setup.prepare?.hybridDict;
  const hybridDict: HybridDict | undefined =
    cpu.length > 0 ? { ...baseHybrid, moduleName: [...(baseHybrid?.moduleName ?? []), ...cpu] } : baseHybrid;
  return {
    qconfigDict: dict,
    prepare: { onWarning: () => {}, ...setup.prepare, ...(hybridDict ? { hybridDict } : {}), march: setup.march },
  };
}

/** A calibrated model's fake-quants by path: the statistics variants can start from. */
export type CalibratedFakeQuants = ReadonlyMap<string, FakeQuantize>;

export function calibratedFakeQuants(model: GraphModule): CalibratedFakeQuants {
  return new Map(model.namedModules().filter((e): e is [string, FakeQuantize] => e[1] instanceof FakeQuantize));
}

const sameSetup = (a: FakeQuantize, b: FakeQuantize) =>
  a.scale.size === b.scale.size && JSON.stringify(a.options) === JSON.stringify(b.options);

/**
 * Calibration runs the float computation (every fake-quant passes its input through), so a fake-quant
 * at the same path with the same options sees the same values in every variant: it takes the
 * baseline's statistics, and only the new or changed ones (an int16 output, a float boundary) observe
 * the calibration batches. Returns how many observed.
 */
function calibrateReusing(prepared: GraphModule, setup: VariantSetup, reuse: CalibratedFakeQuants | undefined): number {
  const fresh: FakeQuantize[] = [];
  const copied: FakeQuantize[] = [];
  for (const [name, fq] of calibratedFakeQuants(prepared)) {
    const source = reuse?.get(name);
    if (source && sameSetup(source, fq)) {
      fq.loadStateDict(source.stateDict({ clone: true }));
      copied.push(fq);
    } else fresh.push(fq);
  }
  if (fresh.length === 0) return 0;
  // the copied ones pass values through without observing again (their statistics are complete) and
  // keep their scale without searching for it again on every batch (the histogram observers' costly part)
  const restore: (() => void)[] = [];
  for (const fq of copied) {
    const o = fq.observer as unknown as Record<string, unknown>;
    const qparams = fq.observer.computeQparams();
    for (const [key, stub] of [
      ['observe', () => {}],
      ['computeQparams', () => qparams],
    ] as const) {
      const own = Object.getOwnPropertyDescriptor(o, key);
      o[key] = stub;
      restore.push(() => {
        if (own) Object.defineProperty(o, key, own);
        else delete o[key];
      });
    }
  }
  try {
    calibrate(prepared, setup.calib as Iterable<Tensor | Tensor[]>, { onWarning: () => {} });
  } finally {
    for (const r of restore) r();
  }
  return fresh.length;
}

/**
 * Prepares, calibrates and (for stage 'fixed') converts one variant; returns the model to measure.
 * With `reuse` (a calibrated baseline's fake-quants), unchanged fake-quants copy its statistics.
 */
export function buildVariant(
  float: Module,
  setup: VariantSetup,
  config: { qconfigDict: QConfigDict; prepare: PrepareQatFxOptions },
  reuse?: CalibratedFakeQuants,
): { prepared: GraphModule; measured: GraphModule; observed: number } {
  const prepared = prepareQatFx(float, config.qconfigDict, config.prepare);
  const observed = calibrateReusing(prepared, setup, reuse);
  setFakeQuantize(prepared, 'VALIDATION');
  const measured =
    setup.stage === 'fixed' ? convertFx(prepared, { march: setup.march, onWarning: () => {} }) : prepared;
  return { prepared, measured, observed };
}

/** Activation dtypes and float steps of a prepared model, to tell whether a variant changed anything. */
export function precisionSignature(prepared: GraphModule): string {
  const parts: string[] = [];
  for (const [name, m] of prepared.namedModules()) if (m instanceof FakeQuantize) parts.push(`${name}:${m.dtype}`);
  for (const n of prepared.graph.nodes) if (n.meta[FLOAT_STEP] === true) parts.push(`float:${n.name}`);
  for (const n of prepared.graph.nodes) if (deployDeviceOf(n) === 'CPU') parts.push(`cpu:${n.name}`);
  return parts.join(',');
}
