import type { OptionSpec } from '../args.js';
import { INPUT_SHAPE_OPTION, MAX_ELEMENTS_OPTION } from '../model-input.js';
import { ENGINE_OPTION } from '../model-runner.js';
import { PREPROCESS_OPTIONS } from '../preprocess-options.js';

/** --data of the commands that only run a model on inputs (run, compare): no labels. */
export const INPUT_DATA_OPTION: Readonly<Record<string, OptionSpec>> = {
  data: {
    type: 'string',
    value: 'DIR',
    description:
      'the inputs: Fashion-MNIST IDX files, or .npy / PNG / JPEG files (no labels needed); one sub-folder DIR/<input>/ or DIR/<input>.npy per input for a model with several (required)',
    required: 'the inputs',
  },
};

/**
 * The options after --data of the commands that run a model over a dataset's samples (eval, run): which split,
 * the input shape, batch size, how many samples, the engine, preprocessing and the import budget. `verb` is what
 * the command does with the samples ('evaluate', 'run').
 */
export function sampleRunOptions(verb: string, defaultBatch: number): Readonly<Record<string, OptionSpec>> {
  return {
    split: {
      type: 'string',
      value: 'test|train',
      description: `which IDX split to ${verb}`,
      default: 'test',
      choices: ['test', 'train'],
    },
    ...INPUT_SHAPE_OPTION,
    batch: { type: 'number', value: 'N', description: 'batch size', default: defaultBatch, integer: true, min: 1 },
    limit: { type: 'number', value: 'N', description: `${verb} only the first N samples`, integer: true, min: 1 },
    ...ENGINE_OPTION,
    ...PREPROCESS_OPTIONS,
    ...MAX_ELEMENTS_OPTION,
  };
}
