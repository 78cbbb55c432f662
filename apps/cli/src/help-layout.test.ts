import { describe, expect, it } from 'vitest';
import { HELP_WIDTH } from './help-layout.js';
import { COMMANDS } from './main.js';
import { run } from './testing/fixtures.js';

/** The lines of a list section (options, arguments, commands) whose name column starts at `indent`. */
function listLines(help: string): string[] {
  return help.split('\n').filter((l) => /^ {2}\S/.test(l));
}

describe('--help layout', () => {
  const helps = async () => [
    ['qtk --help', (await run('--help')).stdout] as const,
    ...(await Promise.all(
      Object.keys(COMMANDS).map(async (c) => [`qtk ${c} --help`, (await run(c, '--help')).stdout] as const),
    )),
  ];

  it(`every help line fits in ${HELP_WIDTH} columns`, async () => {
    for (const [what, text] of await helps()) {
      const long = text.split('\n').filter((l) => l.length > HELP_WIDTH);
      expect(long, what).toEqual([]);
    }
  });

  it('every option, argument and command is followed by a gap of two spaces or by the end of its line', async () => {
    for (const [what, text] of await helps()) {
      const lines = listLines(text);
      expect(lines.length, what).toBeGreaterThan(3);
      // the name is one token (an option with its value: two); then two spaces or nothing
      const jammed = lines.filter((l) => !/^ {2}(--?\S+( [^\s]+)?|[A-Za-z]\S*)( {2,}\S.*)?$/.test(l));
      expect(jammed, what).toEqual([]);
    }
  });

  it('long names get their description on the next line, aligned with the others', async () => {
    const quantize = (await run('quantize', '--help')).stdout.split('\n');
    const at = quantize.indexOf('  --cpu-nodes NAME[,NAME...]');
    expect(at).toBeGreaterThan(0);
    const column = quantize.find((l) => l.startsWith('  --march ID'))!.indexOf('the march');
    expect(quantize[at + 1]!.indexOf('with --hybrid')).toBe(column);
    const top = (await run('--help')).stdout;
    expect(top).toMatch(/\n {2}sensitivity {2}Measures each node/);
  });
});
