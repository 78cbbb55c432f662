// QTK's side of docs/ptq-accuracy.md's zoo tables: every post-training method on each network bench/ptq-zoo.py
// trained (`train`, `export`, `fx`), through the qtk command line as a user runs it (`qtk quantize`, `qtk eval` on the
// 10,000 test images), printed as the markdown rows of both marches beside PyTorch FX's figures (ARCH.fx.json).
// Usage: node --conditions=qtk-source --import tsx bench/ptq-zoo.ts [--dir runs/ptq-zoo] [--arch A,B] [--only NAME,...]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

interface Variant {
  readonly name: string;
  readonly march: 'bayes' | 'bernoulli2';
  /** `-bn` for the ONNX file that kept its BatchNorms (analytic bias correction needs them). */
  readonly file: '' | '-bn';
  readonly args: readonly string[];
}

const OBSERVERS = ['min_max', 'percentile', 'mse', 'kl', 'mix'] as const;

/** Every variant of the tables: each observer alone, then the refinements on min-max and on the default. */
export const VARIANTS: readonly Variant[] = (['bayes', 'bernoulli2'] as const).flatMap((march) => {
  const hybrid = march === 'bernoulli2' ? ['--hybrid'] : [];
  const v = (name: string, file: '' | '-bn', ...args: string[]): Variant => ({
    name: `${march} ${name}`,
    march,
    file,
    args: [...hybrid, ...args],
  });
  return [
    ...OBSERVERS.map((o) => v(o, '', '--observer', o)),
    v('min_max + bias correction', '', '--observer', 'min_max', '--bias-correction'),
    v('mse + bias correction', '', '--observer', 'mse', '--bias-correction'),
    v('min_max + analytic bias correction', '-bn', '--observer', 'min_max', '--analytic-bias-correction'),
    v('mse + analytic bias correction', '-bn', '--observer', 'mse', '--analytic-bias-correction'),
    v('min_max + AdaRound', '', '--observer', 'min_max', '--adaround'),
  ];
});

const QTK = ['--conditions=qtk-source', '--import', 'tsx', join(import.meta.dirname, '../apps/cli/src/bin.ts')];

function qtk(args: readonly string[]): string {
  const r = spawnSync(process.execPath, [...QTK, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`qtk ${args.join(' ')} failed:\n${r.stderr}`);
  return r.stdout;
}

/** The accuracy `qtk eval` prints, in percent. */
function accuracy(model: string, data: string): number {
  const m = /accuracy:\s+([\d.]+)%/.exec(qtk(['eval', model, '--data', data]));
  if (!m) throw new Error(`qtk eval ${model} printed no accuracy`);
  return Number(m[1]);
}

function main(): void {
  const { values } = parseArgs({
    options: { dir: { type: 'string', default: 'runs/ptq-zoo' }, arch: { type: 'string' }, only: { type: 'string' } },
  });
  const dir = values.dir!;
  const arches = values.arch?.split(',') ?? ['resnet18', 'mobilenet_v2', 'regnet_x_400mf', 'mobile_hybrid_net'];
  const only = values.only?.split(',');
  const variants = only ? VARIANTS.filter((v) => only.includes(v.name)) : VARIANTS;
  const test = join(dir, 'test');
  console.log(`| network | float | ${variants.map((v) => v.name).join(' | ')} | FX min-max | FX histogram |`);
  console.log(`|${' --- |'.repeat(variants.length + 4)}`);
  for (const arch of arches) {
    const results: Record<string, number> = { float: accuracy(join(dir, `${arch}.onnx`), test) };
    for (const v of variants) {
      const onnx = join(dir, `${arch}${v.file}.onnx`);
      if (!existsSync(onnx)) continue;
      const out = join(dir, `${arch}.${v.name.replace(/[^a-z0-9]+/gi, '-')}.qtk`);
      const args = ['quantize', onnx, '--calib', join(dir, 'calib'), '--march', v.march, ...v.args, '--out', out];
      qtk(args);
      results[v.name] = accuracy(out, test);
      console.error(`${arch} ${v.name}: ${results[v.name]!.toFixed(2)} %`);
    }
    writeFileSync(join(dir, `${arch}.qtk.json`), `${JSON.stringify(results, null, 2)}\n`);
    const fxFile = join(dir, `${arch}.fx.json`);
    const fx = existsSync(fxFile) ? (JSON.parse(readFileSync(fxFile, 'utf8')) as Record<string, number>) : {};
    const cell = (x: number | undefined) => (x === undefined ? '' : `${x.toFixed(2)} %`);
    const row = [arch, cell(results.float), ...variants.map((v) => cell(results[v.name]))];
    row.push(cell(fx.fx_min_max && fx.fx_min_max * 100), cell(fx.fx_histogram && fx.fx_histogram * 100));
    console.log(`| ${row.join(' | ')} |`);
  }
}

main();
