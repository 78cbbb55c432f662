import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { modelInfoOf, setFakeQuantize } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { decodeModel, OnnxExportError } from '@qtk/onnx';
import { exportOnnx } from '@qtk/onnx/node';
import { qdqScalesPath } from '@qtk/onnx-deploy';
import { exportQuantizedOnnx, writeQdqScales } from '@qtk/onnx-deploy/node';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { noGrad, type Tensor } from '@qtk/tensor';
import { parseArgs, type CommandSpec } from '../args.js';
import { CliError, type CliIo } from '../io.js';
import { inputShapeFor, inputShapeOption, MAX_ELEMENTS_OPTION } from '../model-input.js';
import { describeInputShapes, modelInputs, randomExamples } from '../sample-inputs.js';
import { exportNames, ioNamesOf, savedIoNames } from '../io-names.js';
import { isOnnxPath, loadModelSource, savedShape } from '../model-source.js';
import { FORM_LABEL, onnxFormOf } from '../onnx-file.js';
import {
  MARCH_KEY,
  MODEL_SHA256_KEY,
  OUTPUTS_KEY,
  type OutputInfo,
  outputInfoOf,
  PREPROCESS_KEY,
  withMetadata,
} from '../onnx-metadata.js';
import { checkOutPath } from '../out-path.js';

const DEFAULT_OPSET = 13;

export const exportSpec: CommandSpec = {
  name: 'export',
  summary: 'Exports a QTK model file or an ONNX file to ONNX: float, QDQ (QAT models) or integer (fixed-point models).',
  positionals: [
    { name: 'MODEL', description: 'a QTK model file (float, QAT or fixed-point) or an .onnx file (float)' },
  ],
  options: {
    out: {
      type: 'string',
      value: 'FILE',
      description: 'where to write the ONNX file (required)',
      required: 'where to write the ONNX file',
    },
    opset: {
      type: 'number',
      value: 'N',
      description: 'ai.onnx opset (default 13, or the lowest above it that the model needs)',
      integer: true,
      min: 11,
      max: 21,
    },
    visualize: {
      type: 'boolean',
      description:
        'write the visualisation export instead (exportQuantizedOnnx: one node per QTK module with its scales and dtypes, for graph viewers; it need not run)',
    },
    'input-shape': {
      type: 'string',
      value: 'N,C,H,W',
      description:
        "the model's input shape (default: saved by qtk quantize, or declared by the ONNX file); NAME=SHAPE;... for several inputs",
    },
    ...MAX_ELEMENTS_OPTION,
  },
  details: `A float model exports as float ONNX, a QAT (or calibrated) model as QDQ ONNX (QuantizeLinear /
DequantizeLinear at every fake-quant), a fixed-point model as integer ONNX whose every intermediate integer
equals QTK's (check it with 'qtk compare'). The export runs the model once on a random example of the input
shape, one per input for a model with several (the batch dimension stays free in the file). The file keeps the model's ONNX input and output names (those of
the .onnx file, or those 'qtk quantize' saved). Its metadata records how to read each output (qtk.outputs: name,
dtype and, for integers, the scale: value = integer × scale), the march (qtk.march), the SHA-256 of MODEL
(qtk.model_sha256, checked by 'qtk compare') and the image preprocessing the model file saved (qtk.preprocess, for
'qtk eval FILE.onnx'). The file is written atomically: on any error nothing is
written and an existing FILE is left as it was.`,
};

export function runExport(argv: readonly string[], io: CliIo): number {
  const t0 = performance.now();
  const args = parseArgs(exportSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  const out = String(o.out);
  checkOutPath(out, [{ path, what: 'input model' }]);
  const chosenOpset = o.opset === undefined ? undefined : Number(o.opset);
  let opset = chosenOpset ?? DEFAULT_OPSET;
  let raisedFor = '';
  const visualize = o.visualize === true;
  const write = visualize ? exportQuantizedOnnx : exportOnnx;

  const shapeOption = inputShapeOption(o);
  const { model, kind, label, meta } = loadModelSource(path, o['max-elements'], shapeOption);
  const inputs = modelInputs(model, shapeOption, meta);
  let example: Tensor[];
  try {
    example = randomExamples(inputs, 2);
  } catch (e) {
    if (e instanceof CliError && inputs.length === 1 && !inputShapeFor(model, shapeOption) && !savedShape(meta))
      throw new CliError(`${path} does not record its input shape; pass --input-shape N,C,H,W`, { exitCode: 2 });
    throw e;
  }
  model.eval();
  if (kind === 'qat') setFakeQuantize(model, 'VALIDATION'); // export the frozen scales; the example must not move them
  // The ONNX names the model had (an imported file's, or those qtk quantize saved) stay the file's names.
  const names = exportNames(model, isOnnxPath(path) ? ioNamesOf(model) : savedIoNames(meta));
  let bytes: unknown;
  for (;;) {
    try {
      bytes = write(model, example, out, { opset, ...names });
      break;
    } catch (e) {
      // Without --opset, the export takes the lowest opset the model needs (a LayerNorm left on the CPU: 17).
      const needed = e instanceof OnnxExportError ? e.neededOpset : undefined;
      if (chosenOpset === undefined && needed !== undefined && needed > opset) {
        raisedFor = e instanceof Error ? e.message.replace(/^exportOnnx: /, '').replace(/;.*$/, '') : '';
        opset = needed;
        continue;
      }
      if (e instanceof OnnxExportError)
        throw new CliError(`cannot export ${path} (${label}): ${e.message}; nothing written`, { cause: e });
      // A model whose shapes are fixed for batch 1 (a Reshape to [1, ...]) cannot run the batch-2 example: the
      // export traces at batch 1 instead (the file then fixes nothing the model did not)
      if (example[0]!.shape[0] === 2 && !(e instanceof CliError)) {
        example = randomExamples(inputs, 1);
        continue;
      }
      throw e;
    }
  }
  let outputs: OutputInfo[] = [];
  if (!visualize && bytes instanceof Uint8Array) {
    outputs = outputInfos(model, example, names.outputNames);
    const march = modelInfoOf(model).march;
    const entries: Record<string, string> = {
      [OUTPUTS_KEY]: JSON.stringify(outputs),
      [MODEL_SHA256_KEY]: createHash('sha256').update(readFileSync(path)).digest('hex'),
      ...(march ? { [MARCH_KEY]: march } : {}),
      // The preprocessing qtk quantize saved travels with the file, for qtk eval FILE.onnx.
      ...(meta.preprocess && typeof meta.preprocess === 'object'
        ? { [PREPROCESS_KEY]: JSON.stringify(meta.preprocess) }
        : {}),
    };
    try {
      writeFileAtomicSync(out, withMetadata(bytes, entries));
    } catch (e) {
      throw new CliError(`${out} is written, but adding its metadata failed: ${(e as Error).message}`, { cause: e });
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
    `${inputs.length === 1 ? 'input: ' : 'inputs:'}    ${describeInputShapes(inputs)}`,
    `nodes:     ${written.graph?.node?.length ?? 0} ONNX nodes, opset ${opset}${raisedFor ? ` (${raisedFor})` : ''}`,
    ...outputs.map((o, i) => `${i === 0 ? 'outputs:   ' : '           '}${formatOutputInfo(o)}`),
    `written:   ${out} (${statSync(out).size} bytes, ${form})`,
    ...(sidecar ? [`scales:    ${sidecar}`] : []),
    `time:      ${((performance.now() - t0) / 1000).toFixed(2)} s`,
  ];
  io.out(`${lines.join('\n')}\n`);
  return 0;
}

/** The OutputInfo of each model output, from one run on the example (the names the export gave them). */
function outputInfos(
  model: GraphModule,
  example: readonly Tensor[],
  outputNames: readonly string[] | undefined,
): OutputInfo[] {
  const y = noGrad(() => model.call(...example));
  const values: unknown[] = Array.isArray(y) ? y : [y];
  const defaults = values.length === 1 ? ['output'] : values.map((_, i) => `output_${i}`);
  return values.map((v, i) => outputInfoOf(outputNames?.[i] ?? defaults[i]!, v));
}

function formatOutputInfo(o: OutputInfo): string {
  if (!o.scale) return `'${o.name}' ${o.dtype}`;
  const scales = o.scale.length === 1 ? `scale ${o.scale[0]}` : `${o.scale.length} scales along axis ${o.axis}`;
  return `'${o.name}' ${o.dtype}, ${scales} (value = integer × scale; in the metadata '${OUTPUTS_KEY}')`;
}
