import { join } from 'node:path';
import { Generator } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from './main.js';
import { BadForBernoulli2, run, tempDir, TinyNet, writeOnnx } from './testing/fixtures.js';

let tiny: string;
let bad: string;
beforeAll(() => {
  const dir = tempDir();
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(new Generator(0)));
  bad = writeOnnx(join(dir, 'bad.onnx'), new BadForBernoulli2(new Generator(0)));
});

describe('qtk --help', () => {
  it('qtk alone and qtk --help list the commands', async () => {
    const r = await run('--help');
    expect(r.code).toBe(0);
    for (const c of Object.keys(COMMANDS)) expect(r.stdout).toContain(`  ${c}`);
    const none = await run();
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('usage: qtk <command>');
  });

  it.each(Object.keys(COMMANDS))('qtk %s --help shows its usage and options', async (c) => {
    const r = await run(c, '--help');
    expect(r.code).toBe(0);
    const positionals = COMMANDS[c]!.spec.positionals.map((p) => p.name).join(' ');
    expect(positionals).toMatch(/^MODEL( ONNX)?$/);
    expect(r.stdout).toMatch(new RegExp(`^usage: qtk ${c} ${positionals} \\[options\\]`));
    expect(r.stdout).toContain('--verbose');
    expect(r.stderr).toBe('');
  });
});

describe('qtk inspect', () => {
  it('prints the graph, the operator counts and full support on bayes', async () => {
    const r = await run('inspect', tiny, '--march', 'bayes');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("input 'x' float32 [?, 1, 28, 28]");
    expect(r.stdout).toMatch(/call_module\s+conv\s+conv\s+\(x,\)/);
    expect(r.stdout).toContain('operators (5 nodes, 5 types)');
    expect(r.stdout).toMatch(/\nAveragePool\s+1\s+AvgPool2d\n/);
    expect(r.stdout).toMatch(/\nconv\s+Conv\s+yes\s+fused\s+supported\n/); // conv + relu fuse
    expect(r.stdout).toMatch(/\nfc\s+Gemm\s+yes\s+converted\s+supported\n/);
    expect(r.stdout).toContain("5 of 5 nodes supported on 'bayes'");
  });

  it('names the ops of a PyTorch-exported model (packages/onnx/fixtures) with capability-table names', async () => {
    const r = await run('inspect', join(__dirname, '../../../packages/onnx/fixtures/torch-small.onnx'));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('operators (15 nodes, 11 types)');
    for (const [op, n, as] of [
      ['MaxPool', 3, 'MaxPool2d'],
      ['Conv', 2, 'Conv2d'],
      ['Gemm', 2, 'Linear'],
      ['Reshape', 1, 'onnx.reshape'],
      ['HardSwish', 1, 'Hardswish'],
      ['Resize', 1, 'Upsample'],
    ] as const) {
      expect(r.stdout).toMatch(new RegExp(`\\n${op}\\s+${n}\\s+${as}\\n`));
    }
  });

  it('without --march prints no support report', async () => {
    const r = await run('inspect', tiny);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('pass --march');
    expect(r.stdout).not.toContain('support on march');
  });

  it('lists every node bernoulli2 cannot convert, with exit code 1', async () => {
    const r = await run('inspect', bad, '--march', 'bernoulli2');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      "3 of 6 nodes supported on 'bernoulli2'; unsupported: 3 node(s) of 3 op type(s) (LeakyRelu, Abs, Softmax)",
    );
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      "unsupported on 'bernoulli2': lrelu (LeakyRelu): op 'LeakyRelu' is not in the capability table",
      "unsupported on 'bernoulli2': abs (Abs): op 'Abs' is not in the capability table",
      "unsupported on 'bernoulli2': sm (Softmax): op 'Softmax' is not in the capability table",
    ]);
    // bayes has all three
    const ok = await run('inspect', bad, '--march', 'bayes');
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("6 of 6 nodes supported on 'bayes'");
  });

  it('--max-elements sets the ONNX import budget: a model over it is refused, naming the option', async () => {
    const small = await run('inspect', tiny, '--max-elements', '100'); // the 28x28 input alone holds 784 elements
    expect(small.code).toBe(1);
    expect(small.stderr).toContain('maxElements');
    expect(small.stderr).toContain('raise the budget with --max-elements N');
    expect(small.stderr).not.toMatch(/\n\s+at /);
    const ok = await run('inspect', tiny, '--max-elements', '100000');
    expect(ok.code).toBe(0);
  });

  it('reports a missing file, an unknown march and unknown options clearly, without a stack trace', async () => {
    const missing = await run('inspect', '/nonexistent/model.onnx');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("qtk: error: model '/nonexistent/model.onnx' does not exist\n");
    const march = await run('inspect', tiny, '--march', 'nope');
    expect(march.code).toBe(2);
    expect(march.stderr).toContain("unknown march 'nope' (registered: ");
    const opt = await run('inspect', tiny, '--marhc', 'bayes');
    expect(opt.code).toBe(2);
    expect(opt.stderr).toContain("unknown option '--marhc' for 'qtk inspect'");
    expect(opt.stderr).toContain("run 'qtk inspect --help'");
    const cmd = await run('inspekt', tiny);
    expect(cmd.code).toBe(2);
    expect(cmd.stderr).toContain("unknown command 'inspekt'");
    for (const r of [missing, march, opt, cmd]) expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('--verbose adds the stack trace', async () => {
    const r = await run('inspect', '/nonexistent/model.onnx', '--verbose');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/\n\s+at /);
  });

  it('a file that is not ONNX is a clear error', async () => {
    const r = await run('inspect', join(__dirname, 'main.ts'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^qtk: error: importOnnx: .* (is not a valid ONNX model|holds? no ONNX graph)/);
  });
});
