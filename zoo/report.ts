// docs/model-zoo.md and docs/model-zoo.json from one zoo run: totals against the goals, a summary row per model,
// a table per model, and the reason for every miss.
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import type { ZooEntry } from './entries.js';
import { MARCHES, type MarchResult, MODES, type ModelResult } from './result.js';

export interface RunInfo {
  commit: string;
  /** How many of the rows ran in this run (the others keep a result of an earlier run). */
  fresh: number;
  selection: string;
  seconds: number;
  timeout: number;
  memory: number;
}

type Row = { entry: ZooEntry; result: ModelResult };

/** The SQNR goal: at or above PyTorch FX's (worst output) minus 1 dB. */
const FX_MARGIN_DB = 1;

function fxSqnr(e: ZooEntry): number | null {
  if (!e.fx || !('sqnrDb' in e.fx)) return null;
  const v = e.fx.sqnrDb.map((x) => x ?? Infinity);
  return v.length ? Math.min(...v) : null;
}

const db = (v: number | null | undefined) =>
  v === null ? 'identical' : v === undefined || Number.isNaN(v) ? '-' : `${v.toFixed(1)} dB`;

function march(r: ModelResult, m: string, mode: string): MarchResult | undefined {
  return r.marches.find((x) => x.march === m && x.mode === mode);
}

function meetsSqnr(row: Row, m: string): boolean | null {
  const fx = fxSqnr(row.entry);
  if (fx === null) return null;
  const h = march(row.result, m, 'hybrid');
  if (!h?.converted || h.sqnrDb === undefined) return false;
  return h.sqnrDb === null || h.sqnrDb >= fx - FX_MARGIN_DB;
}

function cell(x: MarchResult | undefined): string {
  if (!x) return '-';
  if (!x.converted) return '✗';
  return `✓ ${Math.round(100 * (x.bpuShare ?? 1))}% BPU, ${db(x.sqnrDb)}`;
}

function importCell(r: ModelResult): string {
  if (r.imports.length === 0) return '✗';
  const ok = r.imports.filter((i) => i.ok);
  const worst = Math.max(...ok.map((i) => i.maxRelError ?? 0));
  const mark = r.imports.some((i) => i.against === 'test data') ? ' (test data)' : '';
  return ok.length === 0
    ? `✗ 0/${r.imports.length}${mark}`
    : `${ok.length}/${r.imports.length}, ${worst.toExponential(1)}${mark}`;
}

const cellText = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The warnings of one quantize listed in the Markdown report (docs/model-zoo.json keeps them all). */
const WARNINGS_SHOWN = 4;

/** Every miss of a model, with its reason, and every warning qtk quantize gave (it may explain a figure). */
function misses(row: Row): string[] {
  const { result: r } = row;
  const out: string[] = [];
  if (row.entry.maxElements)
    out.push(
      `imported with --max-elements ${row.entry.maxElements}: the import's default budget refuses it (it computes the model once while importing)`,
    );
  if (r.stopped) out.push(`stopped: ${r.stopped}`);
  for (const i of r.imports) if (!i.ok) out.push(`import (opset ${i.opset ?? '?'}): ${i.reason ?? 'failed'}`);
  for (const x of r.marches) {
    if (!x.converted) out.push(`${x.march} ${x.mode}: ${x.reason ?? 'refused'}`);
    else {
      if (x.reason) out.push(`${x.march} ${x.mode}: ${x.reason}`);
      if (x.bitExact === false) out.push(`${x.march} ${x.mode} export: ${x.exportReason ?? 'not bit-exact'}`);
      const warnings = x.warnings ?? [];
      for (const w of warnings.slice(0, WARNINGS_SHOWN)) out.push(`${x.march} ${x.mode} warned: ${w}`);
      if (warnings.length > WARNINGS_SHOWN)
        out.push(`${x.march} ${x.mode}: ${warnings.length - WARNINGS_SHOWN} more warning(s) in docs/model-zoo.json`);
    }
  }
  for (const m of MARCHES) {
    const fx = fxSqnr(row.entry);
    const h = march(r, m, 'hybrid');
    if (meetsSqnr(row, m) === false && h?.converted)
      out.push(`${m} hybrid SQNR ${db(h.sqnrDb)} is below FX's ${db(fx)} − ${FX_MARGIN_DB} dB`);
  }
  return out;
}

function totals(rows: readonly Row[]): string[] {
  const n = rows.length;
  const count = (f: (r: Row) => boolean) => rows.filter(f).length;
  const lines = [
    '| goal | count |',
    '| --- | --- |',
    `| models | ${n} |`,
    `| import (QTK float = onnxruntime within 1e-3 of the output range, at some opset) | ${count((r) => r.result.imports.some((i) => i.ok))} / ${n} |`,
    `| import at every opset tried | ${count((r) => r.result.imports.length > 0 && r.result.imports.every((i) => i.ok))} / ${n} |`,
  ];
  for (const m of MARCHES)
    for (const mode of MODES)
      lines.push(`| convert ${mode} on ${m} | ${count((r) => march(r.result, m, mode)?.converted === true)} / ${n} |`);
  const withFx = rows.filter((r) => fxSqnr(r.entry) !== null);
  for (const m of MARCHES)
    lines.push(
      `| ${m} hybrid SQNR ≥ FX − ${FX_MARGIN_DB} dB (of the models FX quantizes) | ${withFx.filter((r) => meetsSqnr(r, m)).length} / ${withFx.length} |`,
    );
  for (const m of MARCHES)
    lines.push(
      `| ${m} hybrid export bit-exact in onnxruntime-node | ${count((r) => march(r.result, m, 'hybrid')?.bitExact === true)} / ${n} |`,
    );
  return lines;
}

function modelTable(row: Row): string[] {
  const { entry: e, result: r } = row;
  const lines = [
    `### ${e.name}`,
    '',
    `${e.source} (${e.family}); file ${e.onnx ? e.onnx.split('/').slice(-1)[0] : '-'}`,
  ];
  const fx = e.fx
    ? 'sqnrDb' in e.fx
      ? `FX int8 PTQ (${e.fx.engine ?? 'fbgemm'}): ${db(fxSqnr(e))}`
      : `FX: ${e.fx.reason}`
    : 'FX: not measured';
  lines.push(
    `; ${fx}`,
    '',
    '| step | result | BPU | SQNR | bit-exact | time | reason |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  );
  for (const i of r.imports)
    lines.push(
      `| import, opset ${i.opset ?? '?'} | ${i.ok ? 'ok' : 'fails'} | | | | ${i.seconds?.toFixed(0) ?? ''} s | ${i.ok ? `max rel error ${i.maxRelError?.toExponential(1)}` : cellText(i.reason ?? '')} |`,
    );
  for (const x of r.marches)
    lines.push(
      `| ${x.march} ${x.mode} | ${x.converted ? 'converts' : 'refused'} | ${x.converted ? `${Math.round(100 * (x.bpuShare ?? 1))}%` : ''} | ${x.converted ? db(x.sqnrDb) : ''} | ${x.bitExact === undefined ? '' : x.bitExact ? 'yes' : 'no'} | ${x.seconds?.toFixed(0) ?? ''} s | ${cellText([x.reason, x.exportReason].filter(Boolean).join('; '))} |`,
    );
  if (r.stopped) lines.push(`| (stopped) | | | | | | ${cellText(r.stopped)} |`);
  lines.push('');
  return lines;
}

/** A row without the machine's paths. */
function forJson({ entry: e, result }: Row): Record<string, unknown> {
  const { onnx: _onnx, data: _data, opsets, ...rest } = e;
  return { entry: { ...rest, opsets: opsets.map((o) => o.opset) }, result };
}

/** Writes DOCS/model-zoo.md and DOCS/model-zoo.json; returns their paths. */
export function writeReport(docs: string, rows: readonly Row[], info: RunInfo): string[] {
  const cpu = cpus();
  const machine = `${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${process.platform}`;
  const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const md = [
    '# The model zoo',
    '',
    `Generated by \`pnpm zoo\` (zoo/run.ts); do not edit by hand. Date ${date}, commit ${info.commit}, machine ${machine}.`,
    `This run: ${info.selection}, ${info.fresh} models in ${(info.seconds / 60).toFixed(1)} min, per model at most ${info.timeout} s and a ${info.memory} MB heap;`,
    `the other ${rows.length - info.fresh} rows keep their result of an earlier run (the 'ran' column gives its date and commit).`,
    '',
    "Each model runs through the `qtk` command line: **import** (QTK's float output against onnxruntime-node's on the",
    'samples, max |QTK − ort| / max |ort|; for the ONNX test data, against the output its case expects, marked',
    "'(test data)', and their SQNR against QTK's float import where onnxruntime has no kernel for an old opset),",
    '`qtk quantize` on each march, **plain** and `--hybrid` (share of the nodes',
    'on the BPU; SQNR of the fixed-point output against the float model, the worst output, by `qtk eval --reference`),',
    'and `qtk export` + `qtk compare` (bit-exact in onnxruntime-node: every integer identical, each node on the inputs',
    'the runtime gave it, and the outputs end to end; the float CPU ops of a hybrid model within 1e-5 relative).',
    "PyTorch FX's int8 PTQ SQNR is measured on the",
    "same samples by zoo/export_models.py (default qconfig; Debian's torch has no FBGEMM, so its x86 engine onednn).",
    'Both calibrate the input scale on the samples (`--input-scale auto`; FX observes its input like any activation).',
    'Goals (issue 28): every model imports; every model converts with `--hybrid` on both marches; SQNR ≥ FX − 1 dB',
    'where FX quantizes the model; every export bit-exact.',
    '',
    '## Totals',
    '',
    ...totals(rows),
    '',
    '## Models',
    '',
    '| model | family | import (opsets, max rel err) | bayes plain | bayes hybrid | bernoulli2 plain | bernoulli2 hybrid | FX | bit-exact (hybrid) | ran |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(({ entry: e, result: r }) => {
      const exact = MARCHES.map((m) => {
        const h = march(r, m, 'hybrid');
        return h?.bitExact === undefined ? '-' : h.bitExact ? '✓' : '✗';
      }).join(' / ');
      const fx = e.fx ? ('sqnrDb' in e.fx ? db(fxSqnr(e)) : 'cannot') : 'not recorded';
      const ran = r.ran
        ? `${r.ran.date.slice(0, 16).replace('T', ' ')}, ${r.ran.commit.split(' ')[0]}`
        : r.stopped?.startsWith('not run')
          ? 'not run'
          : 'not recorded';
      return `| ${e.name} | ${e.family} | ${importCell(r)} | ${MARCHES.flatMap((m) => MODES.map((mode) => cell(march(r, m, mode)))).join(' | ')} | ${fx} | ${exact} | ${ran} |`;
    }),
    '',
    "## Misses and their reasons, and quantize's warnings",
    '',
    ...rows.flatMap((row) => {
      const m = misses(row);
      return m.length ? [`- **${row.entry.name}**`, ...m.map((x) => `  - ${cellText(x)}`)] : [];
    }),
    '',
    '## Per model',
    '',
    "Each step of the architectures and npm models (the ONNX test data's one-op models: their row above, and",
    'docs/model-zoo.json).',
    '',
    ...rows.filter((r) => r.entry.corpus !== 'onnx-testdata').flatMap(modelTable),
  ].join('\n');
  const mdPath = join(docs, 'model-zoo.md');
  const jsonPath = join(docs, 'model-zoo.json');
  writeFileSync(mdPath, md);
  writeFileSync(
    jsonPath,
    `${JSON.stringify({ version: 1, date, commit: info.commit, machine, selection: info.selection, models: rows.map(forJson) })}\n`,
  );
  return [mdPath, jsonPath];
}
