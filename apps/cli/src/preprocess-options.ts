import type { OptionSpec } from './args.js';
import { CliError } from './io.js';
import type { Preprocess } from './data/samples.js';
import { parseFloats, parseSize } from './model-input.js';

/** The image options shared by quantize and eval. */
export const PREPROCESS_OPTIONS: Readonly<Record<string, OptionSpec>> = {
  mean: {
    type: 'string',
    value: 'M[,M,M]',
    description: 'image normalisation: (pixel/255 - mean)/std, one value or one per channel (default 0)',
  },
  std: { type: 'string', value: 'S[,S,S]', description: 'see --mean (default 1)' },
  size: { type: 'string', value: 'WxH', description: "resize images to WxH (default: the model's input size)" },
};

/** The preprocessing from the options, falling back to `saved` (a model file's meta) and then the defaults. */
export function preprocessFrom(options: Record<string, unknown>, saved?: Partial<Preprocess>): Preprocess {
  const std = options.std !== undefined ? parseFloats(String(options.std), '--std') : (saved?.std ?? [1]);
  if (std.some((v) => !(v > 0)))
    throw new CliError(`--std must be positive (a standard deviation), got ${std.join(',')}`, { exitCode: 2 });
  const size = options.size !== undefined ? parseSize(String(options.size)) : saved?.size;
  return {
    mean: options.mean !== undefined ? parseFloats(String(options.mean), '--mean') : (saved?.mean ?? [0]),
    std,
    ...(size ? { size: [size[0]!, size[1]!] as const } : {}),
  };
}
