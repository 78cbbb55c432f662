import { marches } from '@qtk/spec';
import { parseArgs, type CommandSpec } from '../args.js';
import { CliError, type CliIo } from '../io.js';
import { requireMarch } from '../registry-names.js';
import { checkHybrid, checkMarch, type MarchReport } from '../march-check.js';
import { formatDeployDevice } from '@qtk/hybrid';
import { formatArgs, formatArgument, formatTarget, type GraphModule } from '@qtk/ir';
import { INPUT_SHAPE_OPTION, inputShapeOption, loadOnnx, MAX_ELEMENTS_OPTION } from '../model-input.js';
import { modelInputs, randomExamples } from '../sample-inputs.js';
import { nodeOp } from '../op-names.js';
import { inspectModelFile, isModelFile } from './inspect-model-file.js';
import { ModelNames } from '../model-names.js';
import { formatTable } from '../table.js';

export const inspectSpec: CommandSpec = {
  name: 'inspect',
  summary:
    "Prints an ONNX model's graph and operator counts, and with --march which operators the march supports; or a QTK model file's graph, march, scales and meta.",
  positionals: [{ name: 'MODEL', description: 'an ONNX model (.onnx) or a QTK model file (.qtk)' }],
  options: {
    march: {
      type: 'string',
      value: 'ID',
      description: 'check support on this march (bayes, bernoulli2, or a registered plugin march)',
    },
    ...INPUT_SHAPE_OPTION,
    hybrid: {
      type: 'boolean',
      description: 'with --march: where each node runs in a heterogeneous model (BPU or CPU, and why) and the segments',
    },
    ...MAX_ELEMENTS_OPTION,
  },
  details: `Support is decided twice: by the march's capability table (op name and attributes) and by a trial
conversion (prepare with the default QAT qconfig and a 1/128 input stub, calibrate on one random batch in
[-1, 1], convert); the conversion decides, the table alone only when the trial cannot run. Exit code 1 when the march cannot run every operator.
With --hybrid the trial builds the heterogeneous model instead and prints each node's device (exit code 0 when it converts).
A QTK model file (written by qtk quantize or saveModelFile) prints its kind, march, format and meta, its graph, and
the scales: every value's dtype and scale from one run on a random input (fixed point; --input-shape when the file
does not record it), every fake-quant's (QAT).`,
};

export function runInspect(argv: readonly string[], io: CliIo): number {
  const args = parseArgs(inspectSpec, argv);
  const path = args.positionals[0]!;
  if (isModelFile(path)) return inspectModelFile(path, args.options, io);
  const shapeOption = inputShapeOption(args.options);
  const gm = loadOnnx(path, { maxElements: args.options['max-elements'], inputShape: shapeOption });
  const inputs = modelInputs(gm, shapeOption);
  const specs = gm.inputSpecs.map(
    (s) => `'${s.onnxName}' ${s.dtype} [${(s.shape ?? []).map((d) => d ?? '?').join(', ')}]`,
  );
  io.out(`model ${path}: ${specs.length === 1 ? 'input' : `${specs.length} inputs`} ${specs.join(', ')}\n\n`);
  io.out(`${graphTable(gm, new ModelNames(gm))}\n\n`);

  const counts = new Map<string, { label: Set<string>; n: number }>();
  for (const node of gm.graph.nodes) {
    const op = nodeOp(gm, node);
    if (!op) continue;
    const c = counts.get(op.op) ?? { label: new Set<string>(), n: 0 };
    c.label.add(op.label);
    c.n++;
    counts.set(op.op, c);
  }
  const total = [...counts.values()].reduce((s, c) => s + c.n, 0);
  io.out(`operators (${total} nodes, ${counts.size} types):\n`);
  io.out(
    formatTable(
      ['op', 'count', 'as'],
      [...counts]
        .sort((a, b) => b[1].n - a[1].n || (a[0] < b[0] ? -1 : 1))
        .map(([op, c]) => [op, String(c.n), [...c.label].join(', ')]),
    ),
  );

  const marchId = args.options.march as string | undefined;
  if (args.options.hybrid === true && marchId === undefined)
    throw new CliError('--hybrid needs --march ID (the march whose table decides what runs on the BPU)', {
      exitCode: 2,
    });
  if (marchId === undefined) {
    io.out(`\npass --march ${marches.names().join('|')} to check which operators a march supports\n`);
    return 0;
  }
  requireMarch(marchId);
  if (args.options.hybrid === true) {
    const hybrid = checkHybrid(gm, marchId, randomExamples(inputs, 1));
    const names = new ModelNames(hybrid.model);
    const sourceNames = names.addsNames ? { sourceName: (n: string) => names.sourceOf(n) || '-' } : {};
    io.out(`\ndeploy devices on march '${marchId}' (hybrid):\n${formatDeployDevice(hybrid.report, sourceNames)}\n`);
    io.out(`segments: ${hybrid.report.segments.length}\n`);
    if (hybrid.warnings.length) io.out(`warnings:\n${hybrid.warnings.map((w) => `  ${w}`).join('\n')}\n`);
    return 0;
  }
  const report = checkMarch(gm, marchId, randomExamples(inputs, 1));
  printReport(report, io, new ModelNames(gm));
  return report.nodes.every((n) => n.supported) && !report.prepareError ? 0 : 1;
}

/** The graph as printTabular shows it, with the source name beside each node's where the file's names add something. */
function graphTable(gm: GraphModule, names: ModelNames): string {
  if (!names.addsNames) return gm.printTabular();
  const rows = gm.graph.nodes.map((n) => [n.op, n.name, formatTarget(n), formatArgs(n.args), formatArgument(n.kwargs)]);
  return formatTable(...names.withColumn(['opcode', 'name', 'target', 'args', 'kwargs'], rows, 1));
}

function printReport(r: MarchReport, io: CliIo, names: ModelNames): void {
  io.out(`\nsupport on march '${r.march}':\n`);
  if (r.prepareError)
    io.out(`  (the trial conversion could not run: ${r.prepareError}; the capability table alone decides)\n`);
  const rows = r.nodes.map((n) => [
    n.node,
    n.op.op,
    n.table.ok ? 'yes' : 'no',
    n.convert,
    n.supported ? 'supported' : `UNSUPPORTED${(n.reason ?? n.table.reason) ? `: ${n.reason ?? n.table.reason}` : ''}`,
  ]);
  io.out(formatTable(...names.withColumn(['node', 'op', 'in table', 'trial conversion', 'verdict'], rows)));
  const bad = r.nodes.filter((n) => !n.supported);
  const ops = new Set(bad.map((n) => n.op.op));
  io.out(`\n${r.nodes.length - bad.length} of ${r.nodes.length} nodes supported on '${r.march}'`);
  io.out(
    bad.length ? `; unsupported: ${bad.length} node(s) of ${ops.size} op type(s) (${[...ops].join(', ')})\n` : '\n',
  );
  for (const n of bad)
    io.err(
      `unsupported on '${r.march}': ${n.node} (${n.op.op}): ${n.reason ?? n.table.reason ?? 'no conversion rule'}\n`,
    );
  if (r.warnings.length) io.out(`warnings:\n${r.warnings.map((w) => `  ${w}`).join('\n')}\n`);
}
