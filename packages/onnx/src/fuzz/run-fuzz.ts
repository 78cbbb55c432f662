// Drives fuzz-child.ts in a child process with a per-case time limit and a memory limit (the child's
// resident set, read from /proc), restarting it after a hang, a crash or a blow-up, and tallies outcomes.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export interface FuzzOptions {
  seed: number;
  /** Mutations to try (after the corpus files, if any). */
  count: number;
  /** Folder of .onnx files tried first, unmutated. */
  corpusDir?: string;
  /** A case that takes longer is a hang (default 10 s). */
  caseTimeoutMs?: number;
  /** A child whose resident set exceeds this is killed and its case counted as memory (default 1024 MiB). */
  maxRssMiB?: number;
  /** The child script (default fuzz-child.ts; the harness's own test gives a misbehaving one). */
  childScript?: string;
}

export interface FuzzCase {
  i: number;
  outcome: 'imported' | 'typed' | 'generic' | 'hang' | 'crash' | 'memory';
  error?: string;
  ms?: number;
}

export interface FuzzReport {
  tried: number;
  counts: Record<FuzzCase['outcome'], number>;
  /** The cases that are not 'imported' or 'typed'. */
  failures: FuzzCase[];
  /** The outcome of each corpus file, by file name (the corpus runs first, in name order). */
  corpus: Record<string, FuzzCase['outcome']>;
  /** The largest resident set seen, and during which case. */
  peakRssMiB: number;
  peakCase: number;
  slowestMs: number;
}

/** The corpus files, in the order the child tries them. */
export function corpusFileNames(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.onnx'))
    .sort();
}

const CHILD = fileURLToPath(new URL('./fuzz-child.ts', import.meta.url));

function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Runs the child from case `first` until it finishes or is killed; returns the cases it reported. */
function runChild(
  o: Required<Omit<FuzzOptions, 'corpusDir'>> & { corpusDir?: string },
  corpusFiles: readonly string[],
  first: number,
  total: number,
  report: FuzzReport,
): Promise<{ next: number }> {
  return new Promise((resolve) => {
    const args = [
      '--conditions=qtk-source',
      '--import',
      'tsx',
      o.childScript,
      String(o.seed),
      String(o.count),
      String(first),
      ...(o.corpusDir ? [o.corpusDir] : []),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let current = first;
    let started = false;
    let startedAt = 0;
    let killedFor: FuzzCase['outcome'] | null = null;
    const watchdog = setInterval(() => {
      const rss = rssMiB(child.pid!);
      if (rss > report.peakRssMiB) {
        report.peakRssMiB = rss;
        report.peakCase = current;
      }
      if (!started) return;
      if (rss > o.maxRssMiB) killedFor = 'memory';
      else if (performance.now() - startedAt > o.caseTimeoutMs) killedFor = 'hang';
      if (killedFor) child.kill('SIGKILL');
    }, 25);
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let msg: { i: number; start?: boolean } & Partial<FuzzCase>;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.start) {
        current = msg.i;
        started = true;
        startedAt = performance.now();
        return;
      }
      started = false;
      const c = msg as FuzzCase;
      report.tried++;
      report.counts[c.outcome]++;
      report.slowestMs = Math.max(report.slowestMs, c.ms ?? 0);
      if (c.outcome !== 'imported' && c.outcome !== 'typed') report.failures.push(c);
      if (c.i < corpusFiles.length) report.corpus[corpusFiles[c.i]!] = c.outcome;
      current = c.i + 1;
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => {
      if (stderr.length < 2000) stderr += d.toString();
    });
    child.on('exit', () => {
      clearInterval(watchdog);
      lines.close();
      if (current < total) {
        // the case in progress hung, blew up or crashed the process
        report.tried++;
        const outcome = killedFor ?? 'crash';
        report.counts[outcome]++;
        const last = stderr
          .trim()
          .split('\n')
          .filter((l) => !/^\s+at /.test(l))
          .slice(-3)
          .join(' | ');
        report.failures.push({
          i: current,
          outcome,
          ...(outcome === 'crash' && last ? { error: last.slice(0, 300) } : {}),
        });
        if (current < corpusFiles.length) report.corpus[corpusFiles[current]!] = outcome;
        resolve({ next: current + 1 });
      } else resolve({ next: total });
    });
  });
}

/** Runs the corpus files and `count` seeded mutations; resolves with the tally. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const o = { caseTimeoutMs: 10_000, maxRssMiB: 1024, childScript: CHILD, ...options };
  const corpusFiles = o.corpusDir ? corpusFileNames(o.corpusDir) : [];
  const total = corpusFiles.length + o.count;
  const report: FuzzReport = {
    tried: 0,
    counts: { imported: 0, typed: 0, generic: 0, hang: 0, crash: 0, memory: 0 },
    failures: [],
    corpus: {},
    peakRssMiB: 0,
    peakCase: -1,
    slowestMs: 0,
  };
  for (let next = 0; next < total; ) next = (await runChild(o, corpusFiles, next, total, report)).next;
  return report;
}
