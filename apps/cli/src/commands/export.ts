import { readFileSync, statSync } from 'node:fs';
import { setFakeQuantize } from '@qtk/core';
import { decodeModel, OnnxExportError, qdqScalesPath } from '@qtk/onnx';
import { exportOnnx, exportQuantizedOnnx, writeQdqScales } from '@qtk/onnx/node';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { Generator, rand } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { CliError, type CliIo } from '../io.js';
import { exampleShape, MAX_ELEMENTS_OPTION, parseShape, sampleShapeOf } from '../model-input.js';
import { loadModelSource, savedShape } from '../model-source.js';
import { FORM_LABEL, onnxFormOf } from '../onnx-file.js';
import { PREPROCESS_KEY, withMetadata } from '../onnx-metadata.js';
import { checkOutPath } from '../out-path.js';

export const exportSpec: CommandSpec = {
  name: 'export',
  summary: 'Exports a QTK model file or an ONNX file to ONNX: float, QDQ (QAT models) or integer (fixed-point models).',
  positionals: [
    { name: 'MODEL', description: 'a QTK model file (float, QAT or fixed-point) or an .onnx file (float)' },
  ],
  options: {
    out: { type: 'string', value: 'FILE', description: 'where to write the ONNX file (required)' },
    opset: { type: 'number', value: 'N', description: 'ai.onnx opset', default: 13, integer: true, min: 11, max: 21 },
    visualize: {
      type: 'boolean',
      description:
        'write the visualisation export instead (exportQuantizedOnnx: one node per QTK module with its scales and dtypes, for graph viewers; it need not run)',
    },
    'input-shape': {
      type: 'string',
      value: 'N,C,H,W',
      description: "the model's input shape (default: saved by qtk quantize, or declared by the ONNX file)",
    },
    ...MAX_ELEMENTS_OPTION,
  },
  details: `A float model exports as float ONNX, a QAT (or calibrated) model as QDQ ONNX (QuantizeLinear /
DequantizeLinear at every fake-quant), a fixed-point model as integer ONNX whose every intermediate integer
equals QTK's (check it with 'qtk compare'). The export runs the model once on a random example of the input
shape (the batch dimension stays free in the file). The image preprocessing the model file saved is added to the
file's metadata (qtk.preprocess) for 'qtk eval FILE.onnx'. The file is written atomically: on any error nothing is
written and an existing FILE is left as it was.`,
};

export function runExport(argv: readonly string[], io: CliIo): number {
  const t0 = performance.now();
  const args = parseArgs(exportSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  if (o.out === undefined)
    throw new CliError("missing --out FILE (where to write the ONNX file)\nrun 'qtk export --help' for the options", {
      exitCode: 2,
    });
  const out = String(o.out);
  checkOutPath(out, [{ path, what: 'input model' }]);
  const opset = Number(o.opset);
  const visualize = o.visualize === true;
  const write = visualize ? exportQuantizedOnnx : exportOnnx;

  const { model, kind, label, meta } = loadModelSource(path, o['max-elements']);
  const inputShape = o['input-shape'] !== undefined ? parseShape(String(o['input-shape']), '--input-shape') : undefined;
  let sampleShape: (number | null)[];
  try {
    sampleShape = sampleShapeOf(model, inputShape ?? savedShape(meta));
  } catch (e) {
    if (e instanceof CliError && !inputShape && !savedShape(meta))
      throw new CliError(`${path} does not record its input shape; pass --input-shape N,C,H,W`, { exitCode: 2 });
    throw e;
  }
  const example = rand(exampleShape(sampleShape, 2), { low: -1, high: 1, generator: new Generator(0) });
  model.eval();
  if (kind === 'qat') setFakeQuantize(model, 'VALIDATION'); // export the frozen scales; the example must not move them
  let bytes: unknown;
  try {
    bytes = write(model, example, out, { opset });
  } catch (e) {
    if (e instanceof OnnxExportError)
      throw new CliError(`cannot export ${path} (${label}): ${e.message}; nothing written`, { cause: e });
    throw e;
  }
  // The preprocessing qtk quantize saved travels with the file, for qtk eval FILE.onnx.
  const preprocess = meta.preprocess;
  if (!visualize && bytes instanceof Uint8Array && preprocess && typeof preprocess === 'object') {
    try {
      writeFileAtomicSync(out, withMetadata(bytes, { [PREPROCESS_KEY]: JSON.stringify(preprocess) }));
    } catch (e) {
      throw new CliError(
        `${out} is written, but adding the image preprocessing to its metadata failed: ${(e as Error).message}`,
        { cause: e },
      );
    }
  }

  const writtenBytes = new Uint8Array(readFileSync(out));
  const written = decodeModel(writtenBytes);
  const formKind = onnxFormOf(written).kind;
  const form = visualize ? 'visualisation ONNX (not meant to run)' : FORM_LABEL[formKind];
  // A QDQ file gets its scales beside it, keyed by tensor name, for runtimes that take calibration tables.
  let sidecar: string | null = null;
  if (!visualize && formKind === 'qdq') {
    sidecar = qdqScalesPath(out);
    try {
      writeQdqScales(writtenBytes, sidecar);
    } catch (e) {
      throw new CliError(`${out} is written, but its scales file ${sidecar} is not: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  const lines = [
    `model:     ${path} (${label})`,
    `input:     [batch, ${sampleShape.map((d) => d ?? '?').join(', ')}]`,
    `nodes:     ${written.graph?.node?.length ?? 0} ONNX nodes, opset ${opset}`,
    `written:   ${out} (${statSync(out).size} bytes, ${form})`,
    ...(sidecar ? [`scales:    ${sidecar}`] : []),
    `time:      ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  ];
  io.out(`${lines.join('\n')}\n`);
  return 0;
}
