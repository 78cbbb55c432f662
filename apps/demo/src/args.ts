import { parseArgs } from 'node:util';

export const OBSERVERS = ['min_max', 'percentile', 'mse', 'kl', 'mix'] as const;
export type DemoObserver = (typeof OBSERVERS)[number];
export const MARCHES = ['bayes', 'bernoulli2'] as const;
export type DemoMarch = (typeof MARCHES)[number];

export interface DemoOptions {
  observer: DemoObserver;
  march: DemoMarch;
  qatSteps: number;
  /** Initial QAT learning rate (cosine-decayed over the steps). */
  qatLr: number;
  /** Training images used for calibration (the first ones, batch 64). */
  calibImages: number;
  out: string;
  /** Folder of the full Fashion-MNIST IDX files; null = the subset in the repository. */
  data: string | null;
  trainFloat: boolean;
  /** Epochs of --train-float (default 8 on full data, 2 on the subset). */
  floatEpochs: number | null;
  /** Use only the first N training / test images (tests, quick looks). */
  trainLimit: number | null;
  testLimit: number | null;
  /** Float weights (state dict) instead of the embedded ones. */
  weights: string | null;
  seed: number;
  progress: boolean;
}

export const DEFAULTS = {
  observer: 'mse' as DemoObserver,
  march: 'bayes' as DemoMarch,
  qatSteps: 150,
  qatLr: 1e-4,
  calibImages: 1024,
  out: 'runs/demo',
};

export const HELP = `Usage: pnpm demo [options]

Runs the QTK toolkit end to end on the embedded pretrained reference network and the embedded
Fashion-MNIST subset (4,000 train / 2,000 test images): float accuracy, fusion, calibration, QAT
fine-tuning, conversion to fixed point for a march, evaluation, and one summary table. Artifacts
(QAT checkpoint, fixed-point model, qconfig report, float ONNX) go to the output folder.

Options:
  --observer NAME   activation observer for calibration: ${OBSERVERS.join(', ')} (default ${DEFAULTS.observer})
  --march NAME      target march: ${MARCHES.join(', ')} (default ${DEFAULTS.march})
  --qat-steps N     QAT fine-tuning steps, batch 64 (default ${DEFAULTS.qatSteps}; 0 skips QAT)
  --qat-lr X       initial QAT learning rate, cosine-decayed (default ${DEFAULTS.qatLr})
  --calib-images N  training images for calibration (default ${DEFAULTS.calibImages})
  --out DIR         output folder for the artifacts (default ${DEFAULTS.out})
  --data DIR        folder with the full Fashion-MNIST IDX .gz files instead of the embedded subset
  --train-float     retrain the float network first (the float protocol) instead of the embedded weights
  --float-epochs N  epochs of --train-float (default 8 with --data, 2 on the subset)
  --weights FILE    float weights (a state dict from \`pnpm train-float\`) instead of the embedded ones
  --train-limit N   use only the first N training images
  --test-limit N    use only the first N test images
  --seed N          seed for shuffling and --train-float (default 0)
  --no-progress     no progress bars
  -h, --help        this help
`;

export class DemoArgsError extends Error {
  override name = 'DemoArgsError';
}

function count(flag: string, v: string | undefined, min: number): number | null {
  if (v === undefined) return null;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < min) {
    throw new DemoArgsError(`--${flag} expects an integer >= ${min}, got '${v}'`);
  }
  return n;
}

function positive(flag: string, v: string | undefined): number | null {
  if (v === undefined) return null;
  const x = Number(v);
  if (v.trim() === '' || !Number.isFinite(x) || x <= 0)
    throw new DemoArgsError(`--${flag} expects a positive number, got '${v}'`);
  return x;
}

function oneOf<T extends string>(flag: string, v: string | undefined, allowed: readonly T[], dflt: T): T {
  if (v === undefined) return dflt;
  if (!(allowed as readonly string[]).includes(v)) {
    throw new DemoArgsError(`--${flag} must be one of ${allowed.join(', ')}, got '${v}'`);
  }
  return v as T;
}

/** Parses the demo's command line; 'help' when --help was given. Throws DemoArgsError with a clear message. */
export function parseDemoArgs(argv: string[]): DemoOptions | 'help' {
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      // `pnpm demo -- --flag` passes a literal '--' through on some pnpm versions
      args: argv[0] === '--' ? argv.slice(1) : argv,
      allowPositionals: true,
      options: {
        observer: { type: 'string' },
        march: { type: 'string' },
        'qat-steps': { type: 'string' },
        'qat-lr': { type: 'string' },
        'calib-images': { type: 'string' },
        out: { type: 'string' },
        data: { type: 'string' },
        'train-float': { type: 'boolean' },
        'float-epochs': { type: 'string' },
        weights: { type: 'string' },
        'train-limit': { type: 'string' },
        'test-limit': { type: 'string' },
        seed: { type: 'string' },
        'no-progress': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw new DemoArgsError(`${(e as Error).message.split('\n')[0]!.replace(/\. To specify.*$/s, '')} (see --help)`);
  }
  if (values.help) return 'help';
  if (positionals.length) throw new DemoArgsError(`unexpected argument '${positionals[0]}' (see --help)`);
  for (const f of ['out', 'data', 'weights'] as const) {
    if (values[f] !== undefined && String(values[f]).trim() === '') throw new DemoArgsError(`--${f} needs a path`);
  }
  if (values.weights !== undefined && values['train-float'])
    throw new DemoArgsError('--weights and --train-float exclude each other');
  return {
    observer: oneOf('observer', values.observer as string | undefined, OBSERVERS, DEFAULTS.observer),
    march: oneOf('march', values.march as string | undefined, MARCHES, DEFAULTS.march),
    qatSteps: count('qat-steps', values['qat-steps'] as string | undefined, 0) ?? DEFAULTS.qatSteps,
    qatLr: positive('qat-lr', values['qat-lr'] as string | undefined) ?? DEFAULTS.qatLr,
    calibImages: count('calib-images', values['calib-images'] as string | undefined, 1) ?? DEFAULTS.calibImages,
    out: (values.out as string | undefined) ?? DEFAULTS.out,
    data: (values.data as string | undefined) ?? null,
    trainFloat: Boolean(values['train-float']),
    floatEpochs: count('float-epochs', values['float-epochs'] as string | undefined, 1),
    trainLimit: count('train-limit', values['train-limit'] as string | undefined, 1),
    testLimit: count('test-limit', values['test-limit'] as string | undefined, 1),
    weights: (values.weights as string | undefined) ?? null,
    seed: count('seed', values.seed as string | undefined, 0) ?? 0,
    progress: !values['no-progress'],
  };
}
