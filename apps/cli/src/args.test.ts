import { describe, expect, it } from 'vitest';
import { type CommandSpec, choicesText, parseArgs } from './args.js';
import { COMMANDS } from './main.js';

const spec: CommandSpec = {
  name: 'demo',
  summary: 'a command to parse',
  positionals: [{ name: 'MODEL', description: 'a model' }],
  options: {
    data: { type: 'string', value: 'DIR', description: 'the dataset', required: 'the dataset' },
    split: { type: 'string', value: 'test|train', description: 'split', default: 'test', choices: ['test', 'train'] },
    metric: { type: 'string', value: 'NAME', description: 'metric', choices: ['cosine', 'sqnr', 'accuracy'] },
  },
};

function usageMessage(argv: string[]): string {
  try {
    parseArgs(spec, argv);
  } catch (e) {
    return `${(e as Error).message} (exit ${(e as { exitCode?: number }).exitCode})`;
  }
  return 'parsed';
}

describe('parseArgs: required options and choices', () => {
  it('a required option that is missing is a usage error naming it and what it is', () => {
    expect(usageMessage(['m.onnx'])).toBe(
      "missing --data DIR (the dataset)\nrun 'qtk demo --help' for the options (exit 2)",
    );
  });

  it('a missing positional is reported before a missing option; --help asks for neither', () => {
    expect(usageMessage([])).toBe("missing argument MODEL\nrun 'qtk demo --help' for the options (exit 2)");
    expect(parseArgs(spec, ['--help']).help).toBe(true);
  });

  it('a value outside the choices is a usage error listing them', () => {
    expect(usageMessage(['m.onnx', '--data', 'd', '--split', 'val'])).toBe(
      "--split must be test or train, got 'val'\nrun 'qtk demo --help' for the options (exit 2)",
    );
    expect(usageMessage(['m.onnx', '--data', 'd', '--metric=mse'])).toBe(
      "--metric must be one of cosine, sqnr, accuracy, got 'mse'\nrun 'qtk demo --help' for the options (exit 2)",
    );
  });

  it('accepted values and defaults pass through', () => {
    expect(parseArgs(spec, ['m.onnx', '--data', 'd', '--metric', 'sqnr']).options).toEqual({
      data: 'd',
      split: 'test',
      metric: 'sqnr',
    });
  });

  it('choicesText words two values and more', () => {
    expect([choicesText(['ort', 'qtk']), choicesText(['a', 'b', 'c'])]).toEqual(['ort or qtk', 'one of a, b, c']);
  });

  it("every command's required and choice options", () => {
    const declared = Object.entries(COMMANDS).flatMap(([name, c]) =>
      Object.entries(c.spec.options)
        .filter(([, o]) => o.required !== undefined || o.choices !== undefined)
        .map(([k, o]) => `${name} --${k}: ${o.required ?? ''}${o.choices ? ` [${o.choices.join('|')}]` : ''}`),
    );
    expect(declared.sort()).toEqual([
      'compare --data: the inputs',
      'compare --split:  [test|train]',
      'eval --data: the dataset',
      'eval --engine:  [auto|ort|qtk]',
      'eval --reference-runtime:  [ort|qtk]',
      'eval --split:  [test|train]',
      'export --out: where to write the ONNX file',
      'profile --engine:  [auto|ort|qtk]',
      'profile --out: the report folder',
      'quantize --engine:  [auto|ort|qtk]',
      'quantize --out: where to write the fixed-point model',
      'run --data: the inputs',
      'run --engine:  [auto|ort|qtk]',
      'run --out: the folder for the outputs',
      'run --split:  [test|train]',
      'sensitivity --calib: the calibration samples',
      'sensitivity --metric:  [cosine|sqnr|accuracy]',
    ]);
  });
});
