// What the zoo records per model (the worker writes it, run.ts reads it, report.ts tabulates it).

export const MARCHES = ['bayes', 'bernoulli2'] as const;
export const MODES = ['plain', 'hybrid'] as const;

export interface ImportResult {
  opset: number | null;
  ok: boolean;
  /** What QTK's float output was checked against: onnxruntime-node (the default) or the ONNX test data's case. */
  against?: 'test data';
  /** max |QTK − reference| / max |reference| over the outputs, on the samples. */
  maxRelError?: number;
  seconds?: number;
  reason?: string;
}

export interface MarchResult {
  march: string;
  mode: 'plain' | 'hybrid';
  converted: boolean;
  seconds?: number;
  /** Share of the nodes on the BPU (checkDeployDevice; 1 for a plain conversion). */
  bpuShare?: number;
  /** The fixed-point model's SQNR against the float model (the worst output), null when identical. */
  sqnrDb?: number | null;
  /** qtk export + qtk compare: every value identical in onnxruntime-node. */
  bitExact?: boolean;
  reason?: string;
  exportReason?: string;
  /** qtk quantize's warnings (a clamping input scale, a fragmented partition, ...): a figure they explain. */
  warnings?: string[];
}

export interface ModelResult {
  name: string;
  imports: ImportResult[];
  marches: MarchResult[];
  /** The step running when the model was stopped (time or memory bound), if it was. */
  step?: string;
  finished: boolean;
  /** Set by run.ts: why the worker ended early (timed out, out of memory, crashed). */
  stopped?: string;
  /** Set by run.ts: when the model ran (ISO date) and on which commit. */
  ran?: { date: string; commit: string };
}

/** qtk eval --reference --json's output, as far as the zoo reads it. */
export interface EvalJson {
  outputs: { name: string; sqnrDb: number | null; identical: boolean; maxAbsError: number; referenceMaxAbs: number }[];
}

/**
 * A qtk error message without the 'qtk: error: ' prefix, its continuation lines (a list of nodes) joined with '; ',
 * the pointer to --help left out, at most 400 characters.
 */
export function reasonOf(stderr: string): string {
  const lines = stderr.split('\n');
  const at = lines.findIndex((l) => l.startsWith('qtk: error: '));
  let text: string;
  if (at < 0) text = lines.find((l) => l.trim() !== '') ?? '(no message)';
  else {
    const rest = lines.slice(at + 1);
    const end = rest.findIndex((l) => l.trim() === '' || l.startsWith('qtk: ') || l.startsWith("run 'qtk"));
    const more = (end < 0 ? rest : rest.slice(0, end)).map((l) => l.trim());
    text = [lines[at]!.slice('qtk: error: '.length), ...more].join(' ').replace(/: ;/g, ':');
  }
  return text.length > 400 ? `${text.slice(0, 400)}...` : text;
}

/**
 * The warnings of a qtk quantize summary ('warnings:  N', then '  - ' per warning, its further lines indented),
 * each on one line, at most 400 characters.
 */
export function warningsOf(stdout: string): string[] {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => /^warnings:\s+\d+/.test(l));
  if (at < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(at + 1)) {
    if (!line.startsWith('  ')) break;
    if (line.startsWith('  - ')) out.push(line.slice(4).trim());
    else if (out.length) out[out.length - 1] += ` ${line.trim()}`;
  }
  return out.map((w) => (w.length > 400 ? `${w.slice(0, 400)}...` : w));
}
