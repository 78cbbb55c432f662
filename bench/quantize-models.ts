// The quantize benchmark of torchvision-shaped models (ResNet-18, MobileNetV2, MobileNetV3-small, EfficientNet-B0,
// a small ViT; random weights): bench/torchvision-models.py exports them to ONNX (once, into runs/bench-models) and
// times PyTorch FX post-training quantization of each right after `qtk quantize` ran on it (the same files and
// samples, as a real process, its wall time and peak memory measured by /usr/bin/time), so each ratio compares
// the same minute. The process is the bin bundled from the sources (as the CLI's real-process tests run it), which
// starts as the published bin does; through tsx from the sources it started about 2.5 s later. ONNX Runtime's own
// MinMax calibration of the same samples (bench/ort-calibration.ts) runs between the two.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTestCli, TEST_CLI_BIN } from '../apps/cli/src/testing/test-cli-bundle.js';
import { timeOrtCalibration } from './ort-calibration.js';

export const QUANTIZE_MODELS = [
  'resnet18',
  'mobilenet_v2',
  'mobilenet_v3_small',
  'efficientnet_b0',
  'vit_small',
] as const;

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface QuantizeModelsResult {
  /** qtk quantize wall time per model (import, calibration on 32 samples, conversion, file written). */
  readonly quantize_s: Record<string, number>;
  readonly quantize_peak_mb: Record<string, number>;
  /**
   * The part of quantize_s the CLI itself reports (`time:`: from reading its arguments to the file written),
   * without Node's start-up and module loading, like PyTorch's in-process figure.
   */
  readonly quantize_work_s: Record<string, number>;
  /** Where `qtk quantize` ran its calibration (its `engine:` line). */
  readonly quantize_engine: Record<string, string>;
  /** PyTorch FX prepare + calibrate + convert of the same models on the same samples. */
  readonly pytorch_quantize_s: Record<string, number> | null;
  /** The models PyTorch FX cannot quantize, and why. */
  readonly pytorch_cannot: Record<string, string>;
  /** ONNX Runtime's MinMax calibration of the same samples in onnxruntime-node (calibration only). */
  readonly ort_calibration_s: Record<string, number>;
}

export async function benchQuantizeModels(
  dir: string,
  log: (m: string) => void,
): Promise<QuantizeModelsResult | { reason: string }> {
  const python = '/usr/bin/python3';
  if (spawnSync(python, ['-c', 'import torch, torchvision'], { encoding: 'utf8' }).status !== 0)
    return {
      reason: `${python} cannot import torch and torchvision (apt-get install python3-torch python3-torchvision)`,
    };
  if (!existsSync('/usr/bin/time')) return { reason: '/usr/bin/time is missing (apt-get install time)' };
  /** Runs torchvision-models.py (exporting what is missing), timing PyTorch FX on `time`. */
  type TorchTimes = { quantize_s: Record<string, number>; cannot?: Record<string, string> };
  const pytorch = (time: string[]): TorchTimes | { reason: string } => {
    const py = spawnSync(python, [join(ROOT, 'bench/torchvision-models.py'), '--out', dir, '--time', time.join(',')], {
      encoding: 'utf8',
      timeout: 900_000,
    });
    if (py.status !== 0) return { reason: `torchvision-models.py failed: ${py.stderr.trim().slice(-400)}` };
    return JSON.parse(py.stdout.trim().split('\n').pop()!) as TorchTimes;
  };
  log(`exporting the models (once): bench/torchvision-models.py --out ${dir}`);
  const exported = pytorch([]);
  if ('reason' in exported) return exported;
  const torch: Required<TorchTimes> = { quantize_s: {}, cannot: {} };
  const quantize_s: Record<string, number> = {};
  const quantize_peak_mb: Record<string, number> = {};
  const quantize_work_s: Record<string, number> = {};
  const quantize_engine: Record<string, string> = {};
  const ort_calibration_s: Record<string, number> = {};
  await buildTestCli();
  for (const model of QUANTIZE_MODELS) {
    const r = spawnSync(
      '/usr/bin/time',
      [
        '-f',
        'QTK_TIME %e %M',
        process.execPath,
        TEST_CLI_BIN,
        'quantize',
        join(dir, `${model}.onnx`),
        '--calib',
        join(dir, 'calib'),
        '--march',
        'bayes',
        '--out',
        join(dir, `${model}.qtk`),
      ],
      { encoding: 'utf8', timeout: 900_000, cwd: ROOT },
    );
    const m = /QTK_TIME ([\d.]+) (\d+)/.exec(r.stderr);
    if (r.status !== 0 || !m) return { reason: `qtk quantize ${model} failed: ${r.stderr.trim().slice(-400)}` };
    quantize_s[model] = Number(m[1]);
    quantize_peak_mb[model] = Math.round(Number(m[2]) / 1024);
    const work = /^time:\s+([\d.]+) s/m.exec(r.stdout);
    if (work) quantize_work_s[model] = Number(work[1]);
    const engine = /^engine:\s+(.+)$/m.exec(r.stdout);
    if (engine) quantize_engine[model] = engine[1]!;
    const ortTimed = await timeOrtCalibration(join(dir, `${model}.ort-calib.onnx`), join(dir, 'calib', 'x.npy'));
    ort_calibration_s[model] = ortTimed.seconds;
    const timed = pytorch([model]);
    if ('reason' in timed) return timed;
    if (timed.quantize_s[model] !== undefined) torch.quantize_s[model] = timed.quantize_s[model];
    const cannot = timed.cannot?.[model];
    if (cannot) torch.cannot[model] = cannot;
    log(
      `qtk quantize ${model}: ${m[1]} s (${quantize_work_s[model]} s in the CLI; ${quantize_engine[model]}), ` +
        `peak ${quantize_peak_mb[model]} MB; ONNX Runtime MinMax calibration ${ortTimed.seconds.toFixed(2)} s ` +
        `(${ortTimed.tensors} tensors); PyTorch FX ${cannot ?? `${torch.quantize_s[model]?.toFixed(2)} s`}`,
    );
  }
  return {
    quantize_s,
    quantize_peak_mb,
    quantize_work_s,
    quantize_engine,
    pytorch_quantize_s: torch.quantize_s,
    pytorch_cannot: torch.cannot,
    ort_calibration_s,
  };
}
