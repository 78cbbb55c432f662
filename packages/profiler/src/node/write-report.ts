// Writing a report to disk: profiler.html and one JSON file per tool, each replaced atomically. Node-only.
import { mkdirSync, statSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, writeFileAtomicSync } from '@qtk/nn/node';
import type { CheckQconfigResult } from '../checks/check-qconfig.js';
import { formatQconfigInfo } from '../checks/check-qconfig-text.js';
import { InvalidArgumentError } from '@qtk/tensor';
import { nonFiniteAt } from '../report/check-report.js';
import { renderProfilerHtml } from '../report/render-html.js';
import type { ProfilerReport } from '../report/report-model.js';
import { ReportDirError } from '../report/report-dir-error.js';

export interface WrittenReport {
  /** Path of profiler.html. */
  readonly html: string;
  /** Path of each tool's JSON file, by tool name. */
  readonly json: Readonly<Record<string, string>>;
}

const TOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

/** The files to write, in order: every tool's JSON, then profiler.html last (its presence means the run finished). */
function filesOf(
  outDir: string,
  report: ProfilerReport,
  toolResults: Readonly<Record<string, unknown>>,
): { path: string; text: string; tool?: string }[] {
  const files: { path: string; text: string; tool?: string }[] = [];
  for (const [tool, result] of Object.entries(toolResults)) {
    if (!TOOL_NAME.test(tool) || tool.endsWith('.')) {
      throw new InvalidArgumentError(
        `writeProfilerReport: tool name '${tool}' cannot be a file name; use letters, digits, '-', '_' and '.'`,
      );
    }
    const bad = nonFiniteAt(result, tool);
    if (bad) throw new InvalidArgumentError(`writeProfilerReport: ${bad} is not a finite number; use null instead`);
    files.push({ path: join(outDir, `${tool}.json`), text: `${JSON.stringify(result, null, 2)}\n`, tool });
    // as horizon_plugin_pytorch's check_qconfig, the qconfig check also as a text file
    if (tool === 'checkQconfig')
      files.push({ path: join(outDir, 'qconfig_info.txt'), text: formatQconfigInfo(result as CheckQconfigResult) });
  }
  files.push({ path: join(outDir, 'profiler.html'), text: renderProfilerHtml(report) });
  return files;
}

function resultOf(files: { path: string; tool?: string }[]): WrittenReport {
  const json: Record<string, string> = {};
  for (const f of files) if (f.tool !== undefined) json[f.tool] = f.path;
  return { html: files[files.length - 1]!.path, json };
}

const notADirectory = (outDir: string) => new ReportDirError(outDir, 'it exists and is not a directory');

function dirError(outDir: string, err: unknown): ReportDirError {
  const code = (err as NodeJS.ErrnoException).code;
  const problem =
    code === 'ENOTDIR' || code === 'EEXIST'
      ? 'a part of the path is a file'
      : `it cannot be created (${(err as Error).message})`;
  return new ReportDirError(outDir, problem, { cause: err });
}

/**
 * Writes `report` as `outDir/profiler.html` and each entry of `toolResults` as `outDir/<tool>.json` (checkQconfig's
 * also as `qconfig_info.txt`, formatQconfigInfo), creating `outDir` when missing. Every file is replaced atomically (a crash leaves the old file or the new
 * one, never half of one). Throws ReportDirError when `outDir` is a file, InvalidArgumentError for a tool
 * name that is not a plain file name or a result holding NaN / Infinity.
 */
export async function writeProfilerReport(
  outDir: string,
  report: ProfilerReport,
  toolResults: Readonly<Record<string, unknown>>,
): Promise<WrittenReport> {
  const files = filesOf(outDir, report, toolResults);
  const st = await stat(outDir).catch(() => null);
  if (st && !st.isDirectory()) throw notADirectory(outDir);
  if (!st) await mkdir(outDir, { recursive: true }).catch((err) => Promise.reject(dirError(outDir, err)));
  for (const f of files) await writeFileAtomic(f.path, f.text);
  return resultOf(files);
}

/** The synchronous writeProfilerReport. */
export function writeProfilerReportSync(
  outDir: string,
  report: ProfilerReport,
  toolResults: Readonly<Record<string, unknown>>,
): WrittenReport {
  const files = filesOf(outDir, report, toolResults);
  let st: ReturnType<typeof statSync> | null = null;
  try {
    st = statSync(outDir);
  } catch {
    // missing (or under a file: mkdir says which)
  }
  if (st && !st.isDirectory()) throw notADirectory(outDir);
  if (!st) {
    try {
      mkdirSync(outDir, { recursive: true });
    } catch (err) {
      throw dirError(outDir, err);
    }
  }
  for (const f of files) writeFileAtomicSync(f.path, f.text);
  return resultOf(files);
}
