// The samples of a data folder for every input of a model. A model with one input reads the folder's own files (as
// qtk always did); a model with several reads, for each input, the sub-folder named after it (DIR/<input>/, files
// in sorted order, .npy singles or batches, images) or one .npy batch beside them (DIR/<input>.npy). Row i of every
// input is sample i, so every input must give the same number of samples.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { Tensor } from '@qtk/tensor';
import { shownPath } from '../display-path.js';
import { CliError } from '../io.js';
import type { SampleInput } from '../sample-inputs.js';
import { listSampleFiles, loadSamples, type NonFiniteOptions, type Preprocess, SAMPLE_EXTENSIONS } from './samples.js';

/** The layout of data for a model of several inputs, for the --help of the commands that read data. */
export const SEVERAL_INPUTS_DETAILS = `A model with several inputs takes, for each input, a sub-folder of DIR named after it (DIR/<input>/, its
samples in sorted file-name order, characters other than letters, digits, '.', '_' and '-' in the name as '_') or
one .npy file holding its batch [N, ...] (DIR/<input>.npy); row i of every input is sample i, so every input gives
the same number of samples. --input-shape then names each input: 'image=1,3,224,224;mask=1,1,224,224'.`;

/** The samples of every input, row i of each being sample i. */
export interface InputSamples {
  /** One [N, ...sampleShape] float32 tensor per input, in the model's input order. */
  readonly tensors: Tensor[];
  /** A name for each sample (Samples.names of the first input's files). */
  readonly names: readonly string[];
  /** The files read, over all inputs. */
  readonly files: number;
  /** Samples left out for holding non-finite values (one-input models only). */
  readonly skipped: number;
  /** How the data was read, for the report. */
  readonly source: string;
}

export interface InputSamplesOptions {
  /** 'calibration' or 'data': how errors name the folder. */
  readonly what: string;
  readonly preprocess: Preprocess;
  readonly limit?: number;
  readonly nonFinite?: NonFiniteOptions;
}

/** The folder or .npy file name of an input's samples: its name with characters unsafe in a path as '_'. */
export function inputDataName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_');
  return /^\.{0,2}$/.test(safe) ? `_${safe}` : safe; // never '', '.' or '..'
}

/** Reads the samples of `dir` for `inputs` (see the file's comment for the layout). */
export function loadInputSamples(dir: string, inputs: readonly SampleInput[], o: InputSamplesOptions): InputSamples {
  const limit = o.limit ?? Infinity;
  if (inputs.length === 1) {
    const s = loadSamples(listSampleFiles(dir, o.what), inputs[0]!.sampleShape(), o.preprocess, limit, o.nonFinite);
    return {
      tensors: [s.tensor],
      names: s.names,
      files: s.files.length,
      skipped: s.skipped,
      source: `${s.files.length} file(s) in ${dir}`,
    };
  }
  if (o.nonFinite?.skip)
    throw new CliError(
      `--skip-nonfinite is not supported yet for a model with several inputs (${inputs.map((i) => i.name).join(', ')}): ` +
        'leaving a sample out of one input would pair the others with the wrong rows; fix the data instead',
      { exitCode: 2 },
    );
  requireFolder(dir, o.what);
  checkDistinctNames(inputs);
  const loaded = inputs.map((input) => {
    const files = inputFiles(dir, input, inputs, o.what);
    return { input, files, samples: loadSamples(files, input.sampleShape(), o.preprocess, limit, o.nonFinite) };
  });
  const first = loaded[0]!;
  const count = (l: typeof first) => l.samples.tensor.shape[0]!;
  const other = loaded.find((l) => count(l) !== count(first));
  if (other)
    throw new CliError(
      `input '${other.input.name}' has ${count(other)} sample(s) (${where(dir, other.input)}), but input '${first.input.name}' has ${count(first)} (${where(dir, first.input)}); ` +
        'every input needs the same number of samples, row i of each input being sample i',
    );
  const files = loaded.reduce((n, l) => n + l.samples.files.length, 0);
  return {
    tensors: loaded.map((l) => l.samples.tensor),
    names: first.samples.names,
    files,
    skipped: 0,
    source: `${files} file(s) in ${dir} (${inputs.map((i) => where(dir, i)).join(', ')})`,
  };
}

function requireFolder(dir: string, what: string): void {
  if (!existsSync(dir)) throw new CliError(`${what} directory ${shownPath(dir)} does not exist`);
  if (!statSync(dir).isDirectory()) throw new CliError(`${what} ${shownPath(dir)} is not a directory`);
}

/** Two inputs whose names map to the same folder would read the same data: refuse. */
function checkDistinctNames(inputs: readonly SampleInput[]): void {
  const seen = new Map<string, string>();
  for (const { name } of inputs) {
    const folder = inputDataName(name);
    const before = seen.get(folder);
    if (before !== undefined)
      throw new CliError(
        `the inputs '${before}' and '${name}' would both read DIR/${folder}/ (characters other than letters, digits, '.', '_' and '-' are written as '_'); qtk cannot feed this model from a folder`,
      );
    seen.set(folder, name);
  }
}

/** The sample files of one input: DIR/<input>/'s sample files, or DIR/<input>.npy. */
function inputFiles(dir: string, input: SampleInput, inputs: readonly SampleInput[], what: string): string[] {
  const name = inputDataName(input.name);
  const folder = join(dir, name);
  const batch = join(dir, `${name}.npy`);
  const hasFolder = existsSync(folder) && statSync(folder).isDirectory();
  const hasBatch = existsSync(batch);
  if (hasFolder && hasBatch)
    throw new CliError(
      `input '${input.name}' has both a folder ${shownPath(folder)} and a file ${shownPath(batch)}; keep one of them`,
    );
  if (hasFolder) return listSampleFiles(folder, `${what} (input '${input.name}')`);
  if (hasBatch) return [batch];
  const loose = readdirSync(dir).filter((f) =>
    (SAMPLE_EXTENSIONS as readonly string[]).includes(extname(f).toLowerCase()),
  );
  throw new CliError(
    `no ${what} samples for input '${input.name}': neither a folder ${shownPath(folder)} nor a file ${shownPath(batch)} exists. ` +
      `The model has ${inputs.length} inputs (${inputs.map((i) => i.name).join(', ')}): give each a sub-folder of ${shownPath(dir)} named after it ` +
      `(its samples in sorted file-name order) or one .npy holding its batch [N, ...]` +
      (loose.length
        ? `; the ${loose.length} sample file(s) at the top of ${shownPath(dir)} are the layout of a one-input model`
        : ''),
  );
}

function where(dir: string, input: SampleInput): string {
  const name = inputDataName(input.name);
  const folder = join(dir, name);
  return existsSync(folder) && statSync(folder).isDirectory() ? `${folder}/` : join(dir, `${name}.npy`);
}
