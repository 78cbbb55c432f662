// The pre-quantization linter: what will go wrong when this float model is prepared, calibrated and
// converted for a march, found before any of it runs, each finding with a fix a program can apply.
import type { Module } from '@qtk/nn';
import { type LintOptions, lintContext } from './lint-context.js';
import { deviceFindings } from './lint-devices.js';
import type { Finding, FindingSeverity } from './lint-findings.js';
import { fusionFindings, sharedModuleFindings } from './lint-fusion.js';
import { outputPrecisionFindings, qconfigNameFindings } from './lint-qconfig.js';
import { deQuantStubFindings, quantStubFindings } from './lint-stubs.js';

export type CheckModelOptions = LintOptions;

export interface CheckModelResult {
  readonly version: 1;
  readonly march: string;
  /** Stubs, devices, qconfig names, output precision, fusion, shared modules; graph order within each rule. */
  readonly findings: readonly Finding[];
  readonly counts: Readonly<Record<FindingSeverity, number>>;
}

/**
 * Lints `floatModel` for `options.march` before quantization: missing QuantStub / DeQuantStub,
 * ops the march cannot run, qconfig-dict names and types that match nothing, output layers that
 * are not high precision, chains prepare fuses or cannot fuse, and shared modules. Give the
 * qconfigDict, hybridDict and prepare options you will pass to prepareQatFx (default qconfig:
 * `{ global: defaultQatQconfig }`). applyModelFixes turns the findings into those arguments.
 */
export function checkModel(floatModel: Module, options: CheckModelOptions): CheckModelResult {
  const ctx = lintContext(floatModel, options, 'checkModel');
  const findings = [
    ...quantStubFindings(ctx),
    ...deQuantStubFindings(ctx),
    ...deviceFindings(ctx),
    ...qconfigNameFindings(ctx),
    ...outputPrecisionFindings(ctx),
    ...fusionFindings(ctx),
    ...sharedModuleFindings(ctx),
  ];
  const counts = { error: 0, warning: 0, info: 0 };
  for (const f of findings) counts[f.severity]++;
  return { version: 1, march: ctx.march.id, findings, counts };
}
