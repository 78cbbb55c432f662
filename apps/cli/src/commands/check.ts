import { checkModel, type Finding } from '@qtk/profiler';
import { parseArgs, type CommandSpec } from '../args.js';
import type { CliIo } from '../io.js';
import { requireMarch } from '../registry-names.js';
import { INPUT_SHAPE_OPTION, inputShapeOption, loadOnnx, MAX_ELEMENTS_OPTION } from '../model-input.js';
import { ModelNames } from '../model-names.js';
import { formatTable } from '../table.js';
import { highPrecisionOutputs } from '../qconfig-options.js';
import { getDefaultQconfig } from '@qtk/fake-quant';

export const checkSpec: CommandSpec = {
  name: 'check',
  summary: 'Lints a float ONNX model before quantization for a march; each finding with a fix a program can apply.',
  positionals: [{ name: 'MODEL', description: 'the float ONNX model (.onnx)' }],
  options: {
    march: { type: 'string', value: 'ID', description: 'the march to check for (bayes, bernoulli2)', default: 'bayes' },
    hybrid: {
      type: 'boolean',
      description: 'check for a heterogeneous model: operators the march cannot run will stay float on the CPU',
    },
    json: { type: 'boolean', description: "print the findings as JSON (checkModel's result) instead of a table" },
    ...INPUT_SHAPE_OPTION,
    ...MAX_ELEMENTS_OPTION,
  },
  details: `The model is checked as qtk quantize prepares it: a QuantStub after each input (so none is missing),
the default qconfig, outputs in high precision where the march allows; an operator the march's table lacks is tried
in a conversion on random inputs, and is a note when the conversion takes it. Findings: operators the march cannot run (with
the hybridDict entry or --hybrid that fixes each), outputs that are not high precision, chains prepare fuses or
cannot fuse, shared modules, qconfig names matching nothing. Exit code 1 when a finding is an error (the model
will not quantize as it is), 0 otherwise.`,
};

function fixText(f: Finding): string {
  const fix = f.fix;
  switch (fix.kind) {
    case 'qconfig':
      return `qconfig ${JSON.stringify(fix.qconfigDict)}`;
    case 'hybrid':
      return `hybridDict ${JSON.stringify(fix.hybridDict)}`;
    case 'prepare-option':
      return `prepare option ${JSON.stringify(fix.option)}`;
    default:
      return fix.hint;
  }
}

export function runCheck(argv: readonly string[], io: CliIo): number {
  const args = parseArgs(checkSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  const march = String(o.march);
  requireMarch(march);
  // the import checks --input-shape against the model's fixed dims (the verdicts need no example input)
  const gm = loadOnnx(path, { maxElements: o['max-elements'], inputShape: inputShapeOption(o) });
  // the qconfig dict qtk quantize prepares with by default: int8, outputs in high precision
  const global = getDefaultQconfig('fake_quant', 'fake_quant', 'min_max', 'min_max');
  const hybrid = o.hybrid === true;
  const names = ModelNames.afterFusion(gm, march);
  const result = checkModel(gm, {
    march,
    qconfigDict: { global, moduleName: highPrecisionOutputs(gm, { march, global, hybrid }) },
    inputQuantStubs: true,
    ...(o.hybrid === true ? { hybrid: true } : {}),
  });
  if (o.json === true) {
    io.out(`${JSON.stringify(result, null, 2)}\n`);
  } else {
    io.out(`checked ${path} for ${march}${o.hybrid === true ? ' (heterogeneous)' : ''}\n\n`);
    if (result.findings.length === 0) io.out('no findings\n');
    else
      io.out(
        `${formatTable(
          ...names.withColumn(
            ['severity', 'code', 'node', 'message', 'fix'],
            result.findings.map((f) => [f.severity, f.code, f.node, f.message, fixText(f)]),
            2,
          ),
        )}\n`,
      );
    io.out(`\n${result.counts.error} error(s), ${result.counts.warning} warning(s), ${result.counts.info} note(s)\n`);
  }
  return result.counts.error > 0 ? 1 : 0;
}
