import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy } from '@qtk/nn';
import { writeFileAtomicSync } from '@qtk/nn/node';
import { parseArgs, type CommandSpec } from '../args.js';
import { inputBatches } from '../batches.js';
import { SEVERAL_INPUTS_DETAILS } from '../data/input-samples.js';
import { loadInputData } from '../data/eval-data.js';
import { INPUT_DATA_OPTION, sampleRunOptions } from '../data/sample-options.js';
import { shownPath } from '../display-path.js';
import { CliError, type CliIo } from '../io.js';
import { inputShapeOption } from '../model-input.js';
import { type Engine, type NamedOutput, openModel, RUNNABLE_MODEL } from '../model-runner.js';
import { checkOutDir } from '../out-path.js';
import { preprocessFrom } from '../preprocess-options.js';
import { stepProgress } from '../progress.js';

export const runSpec: CommandSpec = {
  name: 'run',
  summary:
    "Runs a model on every sample of a folder and writes each of its outputs as a .npy file, whatever the model's task.",
  positionals: [RUNNABLE_MODEL],
  options: {
    ...INPUT_DATA_OPTION,
    out: {
      type: 'string',
      value: 'DIR',
      description: 'the folder the outputs are written to (required)',
      required: 'the folder for the outputs',
    },
    force: {
      type: 'boolean',
      description: 'write into an existing non-empty --out folder (files of the same names are replaced)',
    },
    ...sampleRunOptions('run', 16),
  },
  details: `Layout of --out: one file per sample and output, OUT/<sample>.<output>.npy, float32 of the output's shape
without the batch axis. <sample> is the sample's file name without its extension ('cat.png' -> 'cat'); a .npy
holding a batch of k samples gives '<name>-0' ... '<name>-<k-1>'; IDX samples are '<split>-<index>'. <output>
is the ONNX output name (a QTK model file: the names qtk quantize saved, else 'output' or 'output_<i>'), with
characters other than letters, digits, '.', '_' and '-' written as '_'. An integer output of a file written by qtk
export is dequantized with the scale its metadata records. Samples are read in sorted file-name order, as qtk
eval and qtk compare read them; for a model with several inputs, <sample> is named after the first input's files.
${SEVERAL_INPUTS_DETAILS}
Each file is written atomically (a temporary file renamed into place). A progress
line per batch goes to stderr (one line each when stderr is not a terminal).`,
};

export async function runRun(argv: readonly string[], io: CliIo): Promise<number> {
  const t0 = performance.now();
  const args = parseArgs(runSpec, argv);
  const o = args.options;
  const path = args.positionals[0]!;
  const split = String(o.split);
  const out = String(o.out);
  checkOutFolder(out, o.force === true);
  const inputShape = inputShapeOption(o);

  const model = await openModel(path, {
    engine: String(o.engine) as Engine,
    ...(inputShape ? { inputShape } : {}),
    maxElements: o['max-elements'],
  });
  try {
    const data = loadInputData(String(o.data), {
      split: split as 'test' | 'train',
      inputs: model.inputs,
      preprocess: preprocessFrom(o, model.savedPreprocess),
      ...(o.limit !== undefined ? { limit: Number(o.limit) } : {}),
    });
    checkDistinct(data.names);
    mkdirSync(out, { recursive: true });
    const batch = Number(o.batch);
    const n = data.inputs[0]!.shape[0]!;
    const total = Math.ceil(n / batch);
    const progress = stepProgress(io);
    let done = 0;
    let written = 0;
    let outputs: { name: string; file: string; dims: readonly number[] }[] = [];
    let b = 0;
    for (const xs of inputBatches(data.inputs, batch)) {
      const k = xs[0]!.shape[0]!;
      const ys = await model.run(xs);
      if (b === 0) outputs = ys.map((y, i) => ({ name: y.name, file: fileNames(ys)[i]!, dims: y.dims.slice(1) }));
      for (const [i, y] of ys.entries())
        written += writeSamples(out, y, outputs[i]!.file, data.names.slice(done, done + k));
      done += k;
      progress.step(b++, total, `${done}/${n} samples`);
    }
    progress.end();
    const lines = [
      `model:     ${path} (${model.label})`,
      `runtime:   ${model.runtime}`,
      `data:      ${data.source}, ${n} sample(s)`,
      ...outputs.map(
        (y, i) =>
          `${i === 0 ? 'outputs:   ' : '           '}'${y.name}' [${y.dims.join(', ')}] -> <sample>.${y.file}.npy`,
      ),
      ...model.notes.map((m) => `note:      ${m}`),
      `written:   ${written} file(s) in ${out}`,
      `time:      ${((performance.now() - t0) / 1000).toFixed(2)} s`,
    ];
    io.out(`${lines.join('\n')}\n`);
    return 0;
  } finally {
    await model.release();
  }
}

/** Refuses an --out that is a file, or a non-empty folder without --force, before any work (exit code 2). */
function checkOutFolder(out: string, force: boolean): void {
  checkOutDir(out);
  let entries: string[];
  try {
    if (!statSync(out).isDirectory())
      throw new CliError(`--out ${shownPath(out)} is a file, not a folder; give a folder for the outputs`, {
        exitCode: 2,
      });
    entries = readdirSync(out);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (entries.length > 0 && !force)
    throw new CliError(
      `--out ${shownPath(out)} is not empty (${entries.length} entries): choose an empty or new folder, or pass --force to write into it`,
      { exitCode: 2 },
    );
}

/** Two samples of one name would overwrite each other's outputs: refuse (e.g. 'a.npy' beside 'a.png'). */
function checkDistinct(names: readonly string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name))
      throw new CliError(
        `two samples are both named '${name}' (files that differ only in their extension, or a batch .npy beside a file named like one of its rows); rename one so each sample's outputs get their own files`,
      );
    seen.add(name);
  }
}

/** Each output's part of the file names: its name with unsafe characters as '_', made distinct. */
function fileNames(outputs: readonly NamedOutput[]): string[] {
  const used = new Set<string>();
  return outputs.map((y, i) => {
    let name = y.name.replace(/[^A-Za-z0-9._-]/g, '_') || `output_${i}`;
    if (used.has(name)) name = `${name}_${i}`;
    used.add(name);
    return name;
  });
}

/** Writes one output of a batch as one .npy per sample; returns the number of files written. */
function writeSamples(out: string, y: NamedOutput, file: string, names: readonly string[]): number {
  if (y.dims[0] !== names.length)
    throw new CliError(
      `output '${y.name}' has shape [${y.dims.join(', ')}] for a batch of ${names.length} samples: its first axis is not the batch, so it cannot be split into one file per sample (qtk run needs outputs whose first axis is the batch)`,
    );
  const per = y.data.length / names.length;
  for (const [r, sample] of names.entries())
    writeFileAtomicSync(
      join(out, `${sample}.${file}.npy`),
      serializeNpy(y.dims.slice(1), y.data.subarray(r * per, (r + 1) * per)),
    );
  return names.length;
}
