// qtk inspect on a QTK model file: what the file says (kind, march, format, meta), the graph, and the scale and
// dtype of every quantized value.
import { closeSync, openSync, readSync } from 'node:fs';
import { extname } from 'node:path';
import type { LoadedModel } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, runNodes } from '@qtk/ir';
import { Tensor } from '@qtk/tensor';
import { CliError, type CliIo } from '../io.js';
import { loadModel } from '../model-file-io.js';
import { inputShapeOption } from '../model-input.js';
import { modelInputs, randomExamples, type SampleInput } from '../sample-inputs.js';
import { formatTable } from '../table.js';

const MAGIC = 'QTKMODEL';

/** Whether `path` is a QTK model file: it starts with the model file's magic bytes, or is named `.qtk`. */
export function isModelFile(path: string): boolean {
  if (extname(path).toLowerCase() === '.qtk') return true;
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(MAGIC.length);
    return readSync(fd, head, 0, head.length, 0) === head.length && head.toString('latin1') === MAGIC;
  } catch {
    return false; // a missing or unreadable file: the ONNX path names the problem
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Prints a model file's header, meta, graph and scales; `--march` / `--hybrid` are for ONNX models. */
export function inspectModelFile(path: string, options: Record<string, unknown>, io: CliIo): number {
  const loaded = loadModel(path);
  const { model, kind, march, meta, header } = loaded;
  if (options.march !== undefined || options.hybrid === true)
    throw new CliError(
      `--march and --hybrid check an ONNX model before quantizing; ${path} is a ${kind} model file${march ? ` made for march '${march}'` : ''}. Inspect the .onnx file it came from${typeof meta.source === 'string' ? ` (${meta.source})` : ''}`,
      { exitCode: 2 },
    );
  io.out(
    `model file ${path}: ${kind}${march ? `, march ${march}` : ''} (${header.format} version ${header.version}, class ${header.className})\n\n`,
  );
  const entries = Object.entries(meta);
  io.out(
    entries.length
      ? `meta:\n${formatTable(
          ['key', 'value'],
          entries.map(([k, v]) => [k, metaText(v)]),
        )}\n`
      : 'meta: none\n\n',
  );
  io.out(`${model.graph.printTabular()}\n\n`);

  if (kind === 'float') {
    io.out('scales: none (a float model)\n');
    return 0;
  }
  if (kind === 'qat') {
    io.out(`fake-quants:\n${formatTable(['name', 'dtype', 'scale'], fakeQuantRows(model))}\n`);
    return 0;
  }
  const inputs = modelInputs(model, inputShapeOption(options), meta);
  let examples: Tensor[];
  try {
    examples = randomExamples(inputs, 1);
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    const give = inputs.length === 1 ? 'N,C,H,W' : `'${inputs.map((i) => `${i.name}=...`).join(';')}'`;
    io.out(`scales: ${path} does not record its input shape; pass --input-shape ${give} to list them\n`);
    return 0;
  }
  io.out(`values (one run on a random input of ${shapesOf(inputs, examples)}):\n`);
  io.out(formatTable(['node', 'module', 'dtype', 'scale'], valueRows(loaded, examples)));
  return 0;
}

function metaText(v: unknown): string {
  const text = typeof v === 'string' ? v : JSON.stringify(v);
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
}

function scaleText(scale: ArrayLike<number>): string {
  if (scale.length === 1) return String(scale[0]);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < scale.length; i++) {
    lo = Math.min(lo, scale[i]!);
    hi = Math.max(hi, scale[i]!);
  }
  return `${scale.length} per channel, ${lo.toExponential(3)} .. ${hi.toExponential(3)}`;
}

function fakeQuantRows(model: GraphModule): string[][] {
  const rows: string[][] = [];
  for (const [name, m] of model.namedModules()) {
    if (!(m instanceof FakeQuantize)) continue;
    const q = m.calculateQparams();
    rows.push([name, q.dtype, scaleText(q.scale)]);
  }
  return rows;
}

function shapesOf(inputs: readonly SampleInput[], examples: readonly Tensor[]): string {
  const shape = (x: Tensor) => `[${x.shape.join(', ')}]`;
  if (examples.length === 1) return `shape ${shape(examples[0]!)}`;
  return inputs.map((input, i) => `'${input.name}' ${shape(examples[i]!)}`).join(', ');
}

/** Every node's value on one random input: quantized values with their storage dtype and scale, floats with none. */
function valueRows(loaded: LoadedModel, examples: readonly Tensor[]): string[][] {
  const model = loaded.model;
  const rows: string[][] = [];
  runNodes(model, [...examples], (node, value) => {
    if (node.op === 'placeholder' || node.op === 'output') return;
    const module = node.op === 'call_module' ? model.getSubmodule(node.target).constructor.name : node.target;
    if (value instanceof QTensor)
      rows.push([node.name, module, `${value.dtype} (${value.data.dtype})`, scaleText(value.scale)]);
    else if (value instanceof Tensor) rows.push([node.name, module, value.dtype, '-']);
  });
  return rows;
}
