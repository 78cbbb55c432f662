import { modelToBytes } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { defaultQat16bitQconfig, defaultQatQconfig, type QConfig } from '@qtk/fake-quant';
import {
  capabilityTableSchema,
  marches,
  OBSERVER_DTYPES,
  QConfigError,
  type MarchBackendV1,
  type ObserverDType,
  type OpCapability,
} from '@qtk/spec';
import { Generator, InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import {
  calibratedProbe,
  codecRoundTrip,
  convertProbe,
  outputStep,
  outputsOf,
  stateOf,
  worstSteps,
} from './probe-run.js';
import { OP_PROBES, type OpProbe, type ProbeCase } from './probes.js';
import { type StepBound, stepBound } from './tolerances.js';
import { describePredicateAgreement } from './predicate-agreement.js';

/** Options of {@link describeMarchConformance}. */
export interface MarchConformanceOptions {
  /**
   * Ops of the table the suite does not probe, each with the reason (shown as a skipped test). Any other op
   * without a probe model fails the suite, naming the op, so a march cannot skip one silently.
   */
  readonly skip?: Readonly<Record<string, string>>;
  /** Probe models for the march's own ops, or replacing @qtk/testkit's (keyed by table op). */
  readonly probes?: Readonly<Record<string, OpProbe>>;
  /** Step bounds replacing the documented ones, by op and dtype (e.g. `{ Exp: { qint16: 8 } }`). */
  readonly tolerances?: Readonly<Record<string, StepBound>>;
  /** The model-file round trip is not checked, for this reason (a march whose modules have no codec yet). */
  readonly skipCodec?: string;
  /** Activation qconfig per dtype (default: defaultQatQconfig, defaultQat16bitQconfig). */
  readonly qconfigs?: Readonly<Partial<Record<ObserverDType, QConfig>>>;
  /** Seed of the probe data and weights (default 2024). */
  readonly seed?: number;
}

const DEFAULT_QCONFIGS: Record<ObserverDType, QConfig> = { qint8: defaultQatQconfig, qint16: defaultQat16bitQconfig };

/** The activation dtypes an op of the table runs (the op's own list, else the table's), observable ones only. */
function dtypesOf(march: MarchBackendV1, cap: OpCapability): ObserverDType[] {
  const listed = cap.dtypes ?? march.capabilities.activationDtypes;
  return OBSERVER_DTYPES.filter((d) => listed.includes(d));
}

/** What the suite does with one op of the table. */
export type OpPlan =
  | { readonly op: string; readonly kind: 'probe'; readonly probe: OpProbe; readonly dtypes: readonly ObserverDType[] }
  | { readonly op: string; readonly kind: 'skip'; readonly reason: string }
  | { readonly op: string; readonly kind: 'missing'; readonly error: Error };

/**
 * The plan for every op of a march's table: probed at the dtypes it claims, skipped with the options'
 * reason, or missing (no probe model and no skip: the suite fails that op with `error`).
 */
export function planMarchOps(
  march: MarchBackendV1,
  options: Pick<MarchConformanceOptions, 'skip' | 'probes'> = {},
): OpPlan[] {
  const probes: Record<string, OpProbe> = { ...OP_PROBES, ...options.probes };
  return march.capabilities.ops.map((cap): OpPlan => {
    const reason = options.skip?.[cap.op];
    if (reason !== undefined) return { op: cap.op, kind: 'skip', reason };
    const probe = probes[cap.op];
    if (probe) return { op: cap.op, kind: 'probe', probe, dtypes: dtypesOf(march, cap) };
    return {
      op: cap.op,
      kind: 'missing',
      error: new InvalidArgumentError(
        `@qtk/testkit has no probe model for op '${cap.op}' of march '${march.id}'; give one in the options' probes, ` +
          `or list '${cap.op}' in the options' skip with the reason it cannot be probed`,
      ),
    };
  });
}

interface ProbeRun {
  readonly probe: ProbeCase;
  readonly qat: GraphModule;
  readonly fixed: GraphModule;
}

/**
 * A vitest suite every march backend (MarchBackendV1) runs: its capability table is valid; for every op of
 * the table, a small single-op model (QuantStub → op → DeQuantStub; conv / linear with the BatchNorm and ReLU
 * the table lets fuse) is prepared with `prepareQatFx(model, qconfig, { march: march.id })`, calibrated on
 * seeded data and converted with `convertFx`, at every dtype the op claims; the fixed-point output stays
 * within the op's documented bound of the fake-quant output (tolerances.ts), converting twice gives the
 * same integers, and a model-file round trip gives bit-identical outputs. Dtypes the table does not claim
 * are refused at prepare with QConfigError. The march is registered if it is not already.
 */
export function describeMarchConformance(march: MarchBackendV1, options: MarchConformanceOptions = {}): void {
  const skip = options.skip ?? {};
  const qconfigs = { ...DEFAULT_QCONFIGS, ...options.qconfigs };
  const seed = options.seed ?? 2024;
  if (!marches.has(march.id)) marches.register(march);

  describe(`march conformance: ${march.id}`, () => {
    describe('capability table', () => {
      it('is a valid MarchBackendV1: apiVersion 1, an id, hooks, and a table that re-parses to itself', () => {
        expect(march.apiVersion).toBe(1);
        expect(typeof march.id === 'string' && march.id.length > 0).toBe(true);
        expect(typeof march.hooks).toBe('object');
        const parsed = capabilityTableSchema.safeParse(march.capabilities);
        expect(parsed.success, parsed.success ? '' : parsed.error.message).toBe(true);
        expect(parsed.data).toEqual(march.capabilities);
        expect(marches.get(march.id)).toBe(march);
      });

      it('every skip names an op of the table and gives a reason', () => {
        const ops = new Set(march.capabilities.ops.map((o) => o.op));
        for (const [op, reason] of Object.entries(skip)) {
          expect(ops.has(op), `skip lists '${op}', which the table of '${march.id}' does not have`).toBe(true);
          expect(reason.trim().length, `skip of '${op}' needs a reason`).toBeGreaterThan(0);
        }
      });

      for (const dtype of OBSERVER_DTYPES) {
        const claimed = march.capabilities.activationDtypes.includes(dtype);
        it(`${dtype} activations: ${claimed ? 'claimed, prepare accepts them' : 'not claimed, prepare refuses them with QConfigError'}`, () => {
          const probe = OP_PROBES.Relu!.build({
            capability: { op: 'Relu', constraints: [] },
            dtype,
            generator: new Generator(seed),
          });
          if (claimed) {
            expect(() => calibratedProbe(march, probe, qconfigs[dtype])).not.toThrow();
            return;
          }
          let error: unknown;
          try {
            calibratedProbe(march, probe, qconfigs[dtype]);
          } catch (e) {
            error = e;
          }
          expect(QConfigError.isInstance(error), `got ${String(error)}`).toBe(true);
          expect((error as Error).message).toContain(dtype);
        });
      }
    });

    describe('every op of the table', () => {
      for (const plan of planMarchOps(march, options)) {
        const op = plan.op;
        if (plan.kind === 'skip') {
          // skipped only when the march's own options give a reason (the skip's note), so the report lists what a
          // march does not test and why
          it(op, (ctx) => ctx.skip(plan.reason));
          continue;
        }
        if (plan.kind === 'missing') {
          it(`${op}: has a probe model`, () => {
            throw plan.error;
          });
          continue;
        }
        const { probe } = plan;
        const cap = march.capabilities.ops.find((o) => o.op === op)!;
        for (const dtype of plan.dtypes) {
          const bound = stepBound(op, cap.impl, dtype, options.tolerances);
          let run: ProbeRun | null = null;
          const probeRun = (): ProbeRun => {
            if (run) return run;
            const built = probe.build({ capability: cap, dtype, generator: new Generator(seed) });
            const qat = calibratedProbe(march, built, qconfigs[dtype]);
            run = { probe: built, qat, fixed: convertProbe(march, qat) };
            return run;
          };
          const label = `${op} (${cap.impl ?? 'integer'}, ${dtype}, ${probe.model})`;

          it(`${label}: fixed point within ${bound} output step(s) of fake-quant`, () => {
            const { probe: p, qat, fixed } = probeRun();
            const worst = worstSteps(qat, fixed, p, p.exact ? 1 : outputStep(qat));
            expect(worst, `${op} at ${dtype}: ${worst} step(s) from fake-quant, bound ${bound}`).toBeLessThanOrEqual(
              p.exact ? 0 : bound,
            );
          });

          it(`${label}: converting twice gives the same integers`, () => {
            const { probe: p, qat, fixed } = probeRun();
            const again = convertProbe(march, qat);
            expect(stateOf(again)).toEqual(stateOf(fixed));
            expect(outputsOf(again, p)).toEqual(outputsOf(fixed, p));
            // the model file holds every integer of every module: equal bytes, equal integers
            if (options.skipCodec === undefined) {
              const file = { kind: 'fixed-point', march: march.id } as const;
              expect(modelToBytes(again, file)).toEqual(modelToBytes(fixed, file));
            }
          });

          if (options.skipCodec === undefined) {
            it(`${label}: a model-file round trip gives bit-identical outputs`, () => {
              const { probe: p, fixed } = probeRun();
              expect(outputsOf(codecRoundTrip(march, fixed), p)).toEqual(outputsOf(fixed, p));
            });
          }
        }
      }
      // skipped only when the march says why it cannot round-trip (options.skipCodec, shown in the test name)
      const skipCodec = options.skipCodec;
      if (skipCodec !== undefined) it('model-file round trip', (ctx) => ctx.skip(skipCodec));
    });

    describe('one predicate: supportsNode agrees with convertNode', () => {
      describePredicateAgreement(
        march,
        { ...OP_PROBES, ...options.probes },
        (cap) => dtypesOf(march, cap),
        qconfigs,
        seed,
      );
    });
  });
}
