// The qconfig dict a command that calibrates an ONNX model prepares with: the observer's int8 qconfig, the
// output layers in high precision (int32) where the march has it, --sensitivity FILE --budget N's int16 nodes,
// --qconfig FILE's edits and --keep-float's float modules, later ones winning.
import { type HybridDict, type QConfigDict, type UnknownModuleNameError, withActivationDtype } from '@qtk/core';
import { type QConfig, qconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import { applyModelFixes, checkModel } from '@qtk/profiler';
import { marches } from '@qtk/spec';
import { z } from 'zod';
import type { OptionSpec } from './args.js';
import { readChecked } from './data/samples.js';
import { CliError } from './io.js';
import { ModelNames } from './model-names.js';

export const QCONFIG_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  qconfig: {
    type: 'string',
    value: 'FILE.json',
    description:
      'qconfig dict edits in the JSON of a qtk check --json fix: {"moduleName": {"NAME": "high-precision-output" | "remove" | {"renamedFrom": "OLD"}}}',
  },
  sensitivity: {
    type: 'string',
    value: 'FILE.json',
    description: 'the table qtk sensitivity --out wrote: with --budget N, int16 activations on at most N nodes',
  },
  budget: {
    type: 'number',
    value: 'N',
    description:
      "with --sensitivity: how many nodes get int16 (the file's autoQconfig choice, else the largest int16 gains)",
    integer: true,
    min: 0,
  },
};

export const QCONFIG_DETAILS = `Output layers (a conv or linear layer giving a model output) get a high-precision (int32) output where
the march has one ("remove" it with --qconfig to keep int8). --sensitivity FILE --budget N gives int16
activations to the nodes autoQconfig chose in FILE (qtk sensitivity --budget), else to those with the
largest measured int16 gain.`;

/** One qconfig-dict edit of a `qtk check --json` fix (the profiler's QconfigDelta). */
const qconfigEditSchema = z.union([
  z.literal('high-precision-output'),
  z.literal('remove'),
  z.object({ renamedFrom: z.string().min(1) }).strict(),
]);
const qconfigDeltaSchema = z
  .object({
    moduleName: z.record(qconfigEditSchema).optional(),
    moduleType: z.record(z.literal('remove')).optional(),
  })
  .strict();

/** The parts of a `qtk sensitivity --out` file that choose int16 nodes. */
const sensitivityFileSchema = z
  .object({
    version: z.literal(1),
    march: z.string().optional(),
    nodes: z.array(z.object({ name: z.string().min(1), int16Gain: z.number().nullable().optional() }).passthrough()),
    autoQconfig: z
      .object({ mode: z.enum(['int16', 'cpu']), int16: z.array(z.string().min(1)) })
      .passthrough()
      .optional(),
  })
  .passthrough();

/** A JSON file of a CLI option, parsed and checked against `schema`; a CliError names the file and the field. */
function readJsonOption<T>(file: string, option: string, schema: z.ZodType<T, z.ZodTypeDef, unknown>): T {
  const text = readChecked(file, `${option} file`).toString('utf8');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new CliError(`${option} ${file}: not JSON (${(e as Error).message})`, { cause: e });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new CliError(`${option} ${file}: ${issues.join('; ')}`);
  }
  return parsed.data;
}

export interface CalibrateQconfig {
  readonly dict: QConfigDict;
  /** The option each moduleName entry came from, to name it when the model has no such module. */
  readonly origin: ReadonlyMap<string, string>;
  /** Modules with a high-precision (int32) output. */
  readonly highPrecision: readonly string[];
  /** Modules given int16 activations by --sensitivity. */
  readonly int16: readonly string[];
}

export interface QconfigInputs {
  readonly march: string;
  /** The int8 qconfig every quantized module gets. */
  readonly global: QConfig;
  readonly hybrid: boolean;
  readonly hybridDict?: HybridDict;
  /** Module names --keep-float keeps float. */
  readonly keepFloat?: readonly string[];
}

/** The qconfig dict of `float` from the options (see QCONFIG_DETAILS); files are read and validated here. */
export function calibrateQconfig(float: GraphModule, o: Record<string, unknown>, q: QconfigInputs): CalibrateQconfig {
  const moduleName: Record<string, QConfig | null> = {};
  const origin = new Map<string, string>();
  const set = (name: string, value: QConfig | null, from: string) => {
    moduleName[name] = value;
    origin.set(name, from);
  };
  for (const [name, value] of Object.entries(highPrecisionOutputs(float, q)))
    set(name, value, 'the high-precision output default');

  const int16 = o.sensitivity !== undefined ? int16Nodes(String(o.sensitivity), o.budget, q.march) : [];
  for (const name of int16)
    if (!Object.hasOwn(moduleName, name))
      set(name, withActivationDtype(q.global, 'qint16'), `--sensitivity ${o.sensitivity}`);
  if (o.sensitivity === undefined && o.budget !== undefined)
    throw new CliError('--budget needs --sensitivity FILE (the table qtk sensitivity --out wrote)', { exitCode: 2 });

  if (o.qconfig !== undefined) applyQconfigFile(String(o.qconfig), moduleName, origin, q.global, new ModelNames(float));
  for (const name of q.keepFloat ?? []) set(name, null, '--keep-float');
  return {
    dict: { global: q.global, moduleName },
    origin,
    highPrecision: Object.entries(moduleName).flatMap(([n, v]) => (v && v.activation === null ? [n] : [])),
    int16: int16.filter((n) => origin.get(n)?.startsWith('--sensitivity')),
  };
}

/**
 * The moduleName entries that give the model's output layers a high-precision (int32) output where the
 * march has one: the fixes of checkModel's output-not-high-precision findings (so qtk check, which lints
 * with these entries, and qtk quantize agree).
 */
export function highPrecisionOutputs(
  float: GraphModule,
  q: Pick<QconfigInputs, 'march' | 'global' | 'hybrid' | 'hybridDict'>,
): Record<string, QConfig | null> {
  const lint = {
    march: q.march,
    qconfigDict: { global: q.global },
    inputQuantStubs: true,
    ...(q.hybrid ? { hybrid: true, hybridDict: q.hybridDict ?? {} } : {}),
  };
  const outputs = checkModel(float, lint).findings.filter((f) => f.code === 'output-not-high-precision');
  return { ...applyModelFixes(float, outputs, lint).qconfigDict.moduleName };
}

/** The int16 nodes of a sensitivity file within --budget. */
function int16Nodes(file: string, budget: unknown, march: string): string[] {
  if (budget === undefined)
    throw new CliError('--sensitivity needs --budget N (how many nodes get int16 activations)', { exitCode: 2 });
  if (!marches.get(march).capabilities.activationDtypes.includes('qint16'))
    throw new CliError(
      `--sensitivity: march '${march}' has no int16 activations; choose a march with them, or keep nodes float with --keep-float`,
      { exitCode: 2 },
    );
  const table = readJsonOption(file, '--sensitivity', sensitivityFileSchema);
  if (table.march !== undefined && table.march !== march)
    throw new CliError(
      `--sensitivity ${file}: the table was measured for march '${table.march}', not '${march}'; measure it for '${march}'`,
    );
  const n = Number(budget);
  // autoQconfig's measured choice, in the order it accepted them; else its candidates: positive int16 gains, largest first
  if (table.autoQconfig?.mode === 'int16') return table.autoQconfig.int16.slice(0, n);
  const gains = table.nodes.filter((e) => (e.int16Gain ?? 0) > 0);
  if (!table.nodes.some((e) => typeof e.int16Gain === 'number'))
    throw new CliError(
      `--sensitivity ${file}: nodes[].int16Gain is missing: the table was measured without int16 variants; rerun qtk sensitivity for march '${march}'`,
    );
  return gains
    .map((e, i) => ({ e, i }))
    .sort((a, b) => b.e.int16Gain! - a.e.int16Gain! || a.i - b.i)
    .slice(0, n)
    .map(({ e }) => e.name);
}

/** Applies a --qconfig file's edits to the entries. */
function applyQconfigFile(
  file: string,
  moduleName: Record<string, QConfig | null>,
  origin: Map<string, string>,
  global: QConfig,
  names: ModelNames,
): void {
  const delta = readJsonOption(file, '--qconfig', qconfigDeltaSchema);
  const from = `--qconfig ${file}`;
  const types = Object.keys(delta.moduleType ?? {});
  if (types.length)
    throw new CliError(
      `${from}: moduleType.${types[0]}: the qconfig dict of qtk has no moduleType entries to remove; edit moduleName entries`,
    );
  for (const [name, edit] of Object.entries(delta.moduleName ?? {})) {
    if (edit === 'high-precision-output') {
      // an ONNX node name or a PyTorch module path stands for the modules it names
      for (const module of names.resolve(name) ?? [name]) {
        moduleName[module] = qconfig(null, (moduleName[module] ?? global).weight);
        origin.set(module, from);
      }
    } else if (edit === 'remove') {
      const entries = (names.resolve(name) ?? [name]).filter((m) => Object.hasOwn(moduleName, m));
      if (entries.length === 0)
        throw new CliError(
          `${from}: moduleName.${name}: "remove" removes nothing: the entries are ${Object.keys(moduleName).join(', ') || 'none'}`,
        );
      for (const m of entries) delete moduleName[m];
    } else {
      if (!Object.hasOwn(moduleName, edit.renamedFrom))
        throw new CliError(
          `${from}: moduleName.${name}.renamedFrom: there is no entry '${edit.renamedFrom}' to move; the entries are ${Object.keys(moduleName).join(', ') || 'none'}`,
        );
      moduleName[name] = moduleName[edit.renamedFrom]!;
      origin.set(name, from);
      delete moduleName[edit.renamedFrom];
    }
  }
}

/** A moduleName entry the model does not have, as a usage error naming the option it came from. */
export function unknownEntryError(
  e: UnknownModuleNameError,
  origin: ReadonlyMap<string, string>,
  float: GraphModule,
): CliError {
  const option = origin.get(e.entry) ?? 'qconfig';
  const listed = float
    .namedModules()
    .map(([n]) => n)
    .filter((n) => n !== '' && !n.includes('.'))
    .sort();
  return new CliError(
    `${option}: no module named '${e.entry}' in the model; its modules are: ${listed.slice(0, 40).join(', ')}${listed.length > 40 ? ', ...' : ''}` +
      (e.closest.length ? `\ndid you mean ${e.closest.map((n) => `'${n}'`).join(' or ')}?` : ''),
    { exitCode: 2, cause: e },
  );
}
