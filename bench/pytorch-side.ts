// Runs bench/pytorch-side.py (PyTorch's side of the same protocols), one figure at a time right after QTK's
// own, so the bench can give QTK / PyTorch ratios measured in the same minute on the same machine (this
// machine's speed drifts by tens of percent over minutes). Needs /usr/bin/python3 with torch (Debian's
// python3-torch); without it the bench says so and leaves the ratios out.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PytorchSide {
  readonly torch: string;
  readonly threads: number;
  readonly float_train_step_ms: number;
  readonly qat_train_step_ms: number;
  readonly float_eval_10k_s: number;
  readonly calib_1024_s: { readonly min_max: number; readonly histogram: number };
  readonly int_eval_10k_s: number;
}

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'pytorch-side.py');

/** The figures pytorch-side.py can time (its --only names). */
export type PytorchFigure =
  | 'float_train_step_ms'
  | 'qat_train_step_ms'
  | 'float_eval_10k_s'
  | 'calib_1024_s'
  | 'int_eval_10k_s';

/** PyTorch's timings (of `only`, default all), or the reason there are none. */
export function runPytorchSide(options: {
  data: string;
  steps: number;
  python?: string;
  only?: readonly PytorchFigure[];
}): { side: Partial<PytorchSide> } | { reason: string } {
  const python = options.python ?? '/usr/bin/python3';
  const probe = spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' });
  if (probe.status !== 0) return { reason: `${python} cannot import torch (apt-get install python3-torch)` };
  const only = options.only ? ['--only', options.only.join(',')] : [];
  const r = spawnSync(python, [SCRIPT, '--data', options.data, '--steps', String(options.steps), ...only], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  if (r.status !== 0)
    return { reason: `pytorch-side.py failed: ${(r.stderr || r.error?.message || '').trim().slice(-400)}` };
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return { side: JSON.parse(line) as Partial<PytorchSide> };
  } catch {
    return { reason: `pytorch-side.py printed no JSON: ${line.slice(0, 200)}` };
  }
}

const ratio = (qtk: unknown, torch: number | undefined): number | null =>
  typeof qtk === 'number' && torch !== undefined && torch > 0 ? Math.round((qtk / torch) * 100) / 100 : null;

/**
 * QTK time / PyTorch time for every figure both sides have: the histogram observers (percentile, mse, kl,
 * mix) against PyTorch's histogram observer, every march's integer eval against PyTorch's int8 eval.
 */
export function ratiosVsPytorch(qtk: Record<string, unknown>, torch: Partial<PytorchSide>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const put = (key: string, value: number | null) => {
    if (value !== null) out[key] = value;
  };
  put('float_train_step_ms', ratio(qtk.float_train_step_ms, torch.float_train_step_ms));
  put('qat_train_step_ms', ratio(qtk.qat_train_step_ms, torch.qat_train_step_ms));
  put('float_eval_10k_s', ratio(qtk.float_eval_10k_s, torch.float_eval_10k_s));
  const calib = qtk.calib_1024_s as Record<string, number> | undefined;
  const torchCalib = torch.calib_1024_s;
  if (calib && torchCalib) {
    out.calib_1024_s = Object.fromEntries(
      Object.entries(calib).map(([observer, s]) => [
        observer,
        ratio(s, observer === 'min_max' ? torchCalib.min_max : torchCalib.histogram),
      ]),
    );
  }
  const intEval = qtk.int_eval_10k_s as Record<string, number> | undefined;
  if (intEval && torch.int_eval_10k_s !== undefined) {
    out.int_eval_10k_s = Object.fromEntries(
      Object.entries(intEval).map(([march, s]) => [march, ratio(s, torch.int_eval_10k_s)]),
    );
  }
  return out;
}
