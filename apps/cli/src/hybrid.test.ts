// qtk inspect / quantize / eval with --hybrid, through the real process: an ONNX model with
// HardSwish, which bernoulli2 cannot run.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { checkDeployDevice } from '@qtk/hybrid';
import { Conv2d, Flatten, Hardswish, Linear, Module, ReLU, AvgPool2d } from '@qtk/nn';
import { argmax, Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { QTensor } from '@qtk/fixed-point';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npyBytes, runProcess, tempDir, writeCalibBatch, writeOnnx } from './testing/fixtures.js';

/** conv → HardSwish → conv + ReLU → avg pool → flatten → linear. */
class HardSwishNet extends Module {
  readonly conv0: Conv2d;
  readonly hswish = new Hardswish();
  readonly conv1: Conv2d;
  readonly relu = new ReLU();
  readonly pool = new AvgPool2d(2);
  readonly flat = new Flatten();
  readonly fc: Linear;
  constructor(g: Generator) {
    super();
    this.conv0 = new Conv2d(1, 4, 3, { padding: 1, generator: g });
    this.conv1 = new Conv2d(4, 4, 1, { generator: g });
    this.fc = new Linear(4 * 14 * 14, 10, { generator: g });
  }
  forward(x: Tensor): Tensor {
    const y = this.relu.call(this.conv1.call(this.hswish.call(this.conv0.call(x))));
    return this.fc.call(this.flat.call(this.pool.call(y)));
  }
}

let dir: string;
let model: string;
let calib: string;
let data: string;
let x: Tensor;
let labels: number[];

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(11);
  model = writeOnnx(join(dir, 'hswish.onnx'), new HardSwishNet(g));
  calib = writeCalibBatch(dir, [8, 1, 28, 28], g);
  data = join(dir, 'data');
  mkdirSync(data);
  x = rand([30, 1, 28, 28], { low: -1, high: 1, generator: g });
  labels = Array.from({ length: 30 }, (_, i) => (i * 3) % 10);
  writeFileSync(join(data, 'x.npy'), npyBytes([30, 1, 28, 28], x.values() as Float32Array));
  writeFileSync(join(data, 'labels.txt'), `${labels.join('\n')}\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HSWISH = 'hswish_hardsigmoid'; // the importer's name for the HardSwish node

describe('qtk --hybrid (real process)', () => {
  it('inspect --march bernoulli2 --hybrid prints the device table and the segment count', () => {
    const r = runProcess('inspect', model, '--march', 'bernoulli2', '--hybrid');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("deploy devices on march 'bernoulli2' (hybrid):");
    expect(r.stdout).toMatch(/^conv0 +BPU +FixedConv$/m);
    expect(r.stdout).toMatch(
      new RegExp(`^${HSWISH} +CPU +Hardswish +op not in table: op 'HardSwish' is not in the capability table$`, 'm'),
    );
    expect(r.stdout).toMatch(/^relu +BPU +FixedConv$/m); // conv1 + relu, fused
    expect(r.stdout).toContain('6 ops: 5 BPU, 1 CPU; 2 CPU<->BPU transition(s); 3 segment(s)');
    expect(r.stdout).toMatch(/^segments: 3$/m);
    // on bayes everything runs on the BPU
    const b = runProcess('inspect', model, '--march', 'bayes', '--hybrid');
    expect(b.code).toBe(0);
    expect(b.stdout).toMatch(/^segments: 1$/m);
    // --hybrid needs a march
    const u = runProcess('inspect', model, '--hybrid');
    expect(u.code).toBe(2);
    expect(u.stderr).toContain('--hybrid needs --march ID');
  });

  it('quantize without --hybrid stops and points at --hybrid; with it writes the heterogeneous model and prints its devices; eval runs it', () => {
    const no = runProcess('quantize', model, '--calib', calib, '--march', 'bernoulli2', '--out', join(dir, 'no.qtk'));
    expect(no.code).toBe(1);
    expect(no.stderr).toContain(`- ${HSWISH}: Hardswish (HardSwish) (op 'HardSwish' is not in the capability table)`);
    expect(no.stderr).toContain('rerun with --hybrid to run these nodes on the CPU');

    const out = join(dir, 'hybrid.qtk');
    const r = runProcess('quantize', model, '--calib', calib, '--march', 'bernoulli2', '--hybrid', '--out', out);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^devices: +5 BPU, 1 CPU; 2 CPU<->BPU transition\(s\); 3 segment\(s\)$/m);
    expect(r.stdout).toContain(`  CPU ${HSWISH} (Hardswish): op not in table`);
    expect(r.stdout).toMatch(
      /^nodes: +7 converted to fixed point \(2 Quantize, 3 FixedConv, 1 FixedAvgPool2d, 1 FixedValueOp\)$/m,
    );
    const loaded = loadModelFileSync(out);
    expect(loaded.kind).toBe('fixed-point');
    expect(loaded.meta).toMatchObject({ hybrid: { cpuOps: [], cpuNodes: [] } });
    expect(checkDeployDevice(loaded.model).segments.map((s) => s.device)).toEqual(['BPU', 'CPU', 'BPU']);

    // eval = evaluating the loaded heterogeneous model directly
    const y = noGrad(() => loaded.model.call(x)) as Tensor | QTensor;
    const pred = argmax(y instanceof QTensor ? y.dequantize() : y, 1).values();
    const want = labels.filter((l, i) => pred[i] === l).length;
    const e = runProcess('eval', out, '--data', data);
    expect(e.stderr).toBe('');
    expect(e.code).toBe(0);
    expect(e.stdout).toContain('(fixed-point, march bernoulli2)');
    expect(e.stdout).toContain(`accuracy:  ${((100 * want) / 30).toFixed(2)}% (${want} / 30)`);
  });

  it('--cpu-ops and --cpu-nodes put more nodes on the CPU; unknown names are usage errors', () => {
    const out = join(dir, 'cpu.qtk');
    /** `qtk quantize` of the test model for bernoulli2 into `out`, with these extra options. */
    const quantize = (...options: string[]) =>
      runProcess('quantize', model, '--calib', calib, '--march', 'bernoulli2', ...options, '--out', out);
    const r = quantize('--hybrid', '--cpu-ops', 'Gemm', '--cpu-nodes', 'conv0');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^devices: +3 BPU, 3 CPU; 2 CPU<->BPU transition\(s\); 3 segment\(s\)$/m);
    expect(r.stdout).toContain("  CPU conv0 (Conv2d): hybridDict: moduleName 'conv0'");
    expect(r.stdout).toContain("  CPU fc (Linear): hybridDict: moduleName 'fc'");
    const report = checkDeployDevice(loadModelFileSync(out).model);
    expect(report.segments.map((s) => `${s.device}:${s.nodes.join(',')}`)).toEqual([
      `CPU:conv0,${HSWISH}`,
      'BPU:relu,pool,flat',
      'CPU:fc',
    ]);

    const badOp = quantize('--hybrid', '--cpu-ops', 'Softmax');
    expect(badOp.code).toBe(2);
    expect(badOp.stderr).toContain(
      "--cpu-ops: the model has no 'Softmax' operator; its operators are: AveragePool, Conv, Flatten, Gemm, HardSwish, Relu",
    );
    const badNode = quantize('--hybrid', '--cpu-nodes', 'conv_0');
    expect(badNode.code).toBe(1);
    expect(badNode.stderr).toContain(
      "hybridDict.moduleName entry 'conv_0' matches nothing in the model; closest: conv0",
    );
    const noHybrid = quantize('--cpu-nodes', 'conv0');
    expect(noHybrid.code).toBe(2);
    expect(noHybrid.stderr).toContain('--cpu-ops and --cpu-nodes need --hybrid');
  });
});
