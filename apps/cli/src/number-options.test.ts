import { describe, expect, it } from 'vitest';
import { COMMANDS } from './main.js';
import { run } from './testing/fixtures.js';

// Parsing comes first, so a model path that does not exist is never reached.
const MODEL = 'never-read.onnx';
const BASE: Record<string, string[]> = {
  quantize: [MODEL, '--calib', 'calib', '--out', 'out.qtk'],
  eval: [MODEL, '--data', 'data'],
  inspect: [MODEL],
};

describe('numeric options are validated up front (exit code 2, the option and its range named)', () => {
  it('every number option of every command declares its accepted range', () => {
    for (const [name, c] of Object.entries(COMMANDS)) {
      for (const [opt, o] of Object.entries(c.spec.options)) {
        if (o.type !== 'number') continue;
        expect({ command: name, option: opt, integer: o.integer, hasMin: o.min !== undefined }).toEqual({
          command: name,
          option: opt,
          integer: true,
          hasMin: true,
        });
      }
    }
  });

  const cases: [string, string, string][] = [];
  for (const command of ['quantize', 'eval']) {
    for (const option of ['limit', 'batch']) {
      for (const value of ['0', '-1', '2.5', '1e400', 'NaN', 'abc', '1/0', '', '-0.5'])
        cases.push([command, option, value]);
    }
  }
  it.each(cases)("qtk %s --%s '%s'", async (command, option, value) => {
    const r = await run(command, ...BASE[command]!, `--${option}`, value);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      new RegExp(
        `^qtk: error: option '--${option}' must be (an integer >= 1|a number), got '${value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}'\n`,
      ),
    );
  });

  it.each(['0', '-1', '1e-300', '1e-45', '1e300', '3.5e38', 'abc', '1/0', '0/0'])(
    "qtk quantize --input-scale '%s'",
    async (value) => {
      const r = await run('quantize', ...BASE.quantize!, '--input-scale', value);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `qtk: error: --input-scale must be a positive number from 1.2e-38 to 3.4e38 (a normal float32, e.g. 1/128) or 'auto', got '${value}'\n`,
      );
    },
  );

  it('the range is in --help', async () => {
    for (const command of ['quantize', 'eval']) {
      const r = await run(command, '--help');
      expect(r.stdout).toMatch(/--limit N\s+.*\(an integer >= 1\)/);
      expect(r.stdout).toMatch(/--batch N\s+.*\(an integer >= 1\) \(default: \d+\)/);
    }
  });
});
