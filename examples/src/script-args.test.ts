import { afterEach, describe, expect, it, vi } from 'vitest';
import { scriptArgs } from './script-args.js';

const OPTIONS = { lr: { type: 'string', default: '0.05' }, limit: { type: 'string' } } as const;

afterEach(() => vi.restoreAllMocks());

describe('scriptArgs', () => {
  it("parses a script's own flags with their defaults, plus --data", () => {
    expect(scriptArgs('usage', OPTIONS, ['--data', 'debian', '--limit', '100'])).toEqual({
      lr: '0.05',
      limit: '100',
      data: 'debian',
    });
    expect(scriptArgs('usage', OPTIONS, ['--lr', '0.1'])).toEqual({ lr: '0.1' });
  });

  it('prints the help and exits 0 on -h / --help', () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const exit = vi.spyOn(process, 'exit').mockImplementation((() => {
      throw new Error('exit');
    }) as never);
    for (const flag of ['-h', '--help']) expect(() => scriptArgs('Usage: x\n', OPTIONS, [flag])).toThrow('exit');
    expect(write.mock.calls).toEqual([['Usage: x\n'], ['Usage: x\n']]);
    expect(exit.mock.calls).toEqual([[0], [0]]);
  });

  it('refuses a flag the script does not take, naming it', () => {
    expect(() => scriptArgs('usage', OPTIONS, ['--epochs', '3'])).toThrow(/--epochs/);
  });
});
