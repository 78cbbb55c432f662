// `qtk inspect MODEL | head -1`: when the reader closes the pipe early, qtk stops quietly (exit 0, nothing on
// stderr) instead of dying on an unhandled EPIPE with a stack trace.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Module, ReLU, Sigmoid } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { CLI_DIR, tempDir, writeOnnx } from './testing/fixtures.js';

/** 1200 activations in a row: a node table longer than a pipe's buffer (64 KiB). */
class LongChain extends Module {
  readonly layers: Module[] = [];
  constructor() {
    super();
    for (let i = 0; i < 1200; i++) {
      const m = i % 2 ? new ReLU() : new Sigmoid();
      this.registerModule(`a${i}`, m);
      this.layers.push(m);
    }
  }
  forward(x: Tensor): Tensor {
    return this.layers.reduce((y, m) => (m as unknown as { call(t: Tensor): Tensor }).call(y), x);
  }
}

describe('a closed stdout pipe', () => {
  it('qtk inspect stops quietly when its reader goes away after the first line', async () => {
    const model = writeOnnx(join(tempDir(), 'long.onnx'), new LongChain());
    const child = spawn(
      process.execPath,
      ['--conditions=qtk-source', '--import', 'tsx', join(CLI_DIR, 'src/bin.ts'), 'inspect', model],
      { cwd: CLI_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // read the first chunk, then close the pipe as `head -1` does
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
