import { describe, expect, it } from 'vitest';
import { bufferIo } from './io.js';
import { stepProgress } from './progress.js';

describe('stepProgress', () => {
  it('writes one line per step when stderr is not a terminal', () => {
    const io = bufferIo();
    const p = stepProgress(io);
    p.step(0, 2, 'statistics');
    p.step(1, 2, 'firstDivergence');
    p.end();
    expect(io.stderr).toBe('[1/2] statistics\n[2/2] firstDivergence\n');
  });

  it('redraws one line on a terminal and ends it with a newline', () => {
    const io = bufferIo({ errIsTerminal: true });
    const p = stepProgress(io);
    p.step(0, 2, 'statistics');
    p.step(1, 2, 'firstDivergence');
    p.end();
    expect(io.stderr).toBe(`\r${'[1/2] statistics'.padEnd(32)}\r${'[2/2] firstDivergence'.padEnd(32)}\n`);
  });
});
