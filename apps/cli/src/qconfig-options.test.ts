// qtk quantize's qconfig: high-precision outputs by default, --qconfig FILE.json (a qtk check fix's qconfig
// dict), --sensitivity FILE --budget N (int16 nodes): checked in the converted model the command writes.
import '@qtk/march-bayes';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadModelFileSync } from '@qtk/core/node';
import { QTensor } from '@qtk/fixed-point';
import { runNodes } from '@qtk/ir';
import { Generator, rand } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { run, tempDir, TinyNet, writeCalibBatch, writeOnnx } from './testing/fixtures.js';

let dir: string;
let tiny: string;
let calib: string;
let serial = 0;

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(5);
  tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(g));
  calib = writeCalibBatch(dir, [6, 1, 28, 28], g);
});

/** Writes `value` as JSON to a fresh file and returns its path. */
function jsonFile(value: unknown): string {
  const path = join(dir, `f${serial++}.json`);
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

async function quantize(...extra: string[]) {
  const out = join(dir, `m${serial++}.qtk`);
  const r = await run('quantize', tiny, '--calib', calib, '--march', 'bayes', '--out', out, ...extra);
  return { ...r, out };
}

/** The dtype of each node's quantized output in the converted model written to `file`, by node name. */
function dtypesOf(file: string): Record<string, string> {
  const { model } = loadModelFileSync(file);
  const x = rand([2, 1, 28, 28], { low: -1, high: 1, generator: new Generator(9) });
  const dtypes: Record<string, string> = {};
  runNodes(model as never, [x], (node, value) => {
    if (value instanceof QTensor) dtypes[node.name] = value.dtype;
  });
  return dtypes;
}

describe('qtk quantize: the output layer is high precision by default', () => {
  it('the Linear giving the model output is int32 in the converted model; the summary says so', async () => {
    const r = await quantize();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(dtypesOf(r.out)).toEqual({
      _generated_quant_stub_0: 'qint8',
      relu: 'qint8',
      pool: 'qint8',
      flat: 'qint8',
      fc: 'qint32',
      output: 'qint32',
    });
    expect(r.stdout).toContain('precision:    int32 (high-precision) outputs: fc\n');
  });

  it('--qconfig FILE with a "remove" edit keeps it int8', async () => {
    const r = await quantize('--qconfig', jsonFile({ moduleName: { fc: 'remove' } }));
    expect(r.code).toBe(0);
    expect(dtypesOf(r.out).fc).toBe('qint8');
    expect(r.stdout).not.toContain('precision:');
  });
});

describe('qtk quantize --sensitivity FILE --budget N', () => {
  const table = (extra: object = {}) => ({
    version: 1,
    march: 'bayes',
    metric: 'cosine',
    nodes: [
      { name: 'pool', type: 'AvgPool2d', sensitivity: 0.02, int16Gain: 0.001 },
      { name: 'relu', type: 'ConvReLU2d', sensitivity: 0.01, int16Gain: 0.004 },
      { name: 'flat', type: 'Flatten', sensitivity: 0, int16Gain: 0 },
    ],
    ...extra,
  });

  it('gives int16 to the nodes with the largest int16 gain, at most N', async () => {
    const one = await quantize('--sensitivity', jsonFile(table()), '--budget', '1');
    expect(one.stderr).toBe('');
    expect(dtypesOf(one.out)).toMatchObject({ relu: 'qint16', pool: 'qint8', fc: 'qint32' });
    expect(one.stdout).toContain('precision:    int32 (high-precision) outputs: fc; int16: relu\n');
    const two = await quantize('--sensitivity', jsonFile(table()), '--budget', '5');
    // flat has no gain: never chosen
    expect(dtypesOf(two.out)).toMatchObject({ relu: 'qint16', pool: 'qint16', fc: 'qint32' });
  });

  it("takes the file's autoQconfig choice (qtk sensitivity --budget) when it has one", async () => {
    const chosen = table({ autoQconfig: { mode: 'int16', chosen: [], int16: ['pool'], hybridDict: null } });
    const r = await quantize('--sensitivity', jsonFile(chosen), '--budget', '1');
    expect(dtypesOf(r.out)).toMatchObject({ relu: 'qint8', pool: 'qint16' });
  });
});

describe('qconfig files are untrusted input: a bad one is an error naming the file and the field', () => {
  it('not JSON, a wrong field, an unknown module name, a missing --budget', async () => {
    const notJson = jsonFile('{ moduleName: ');
    const a = await quantize('--qconfig', notJson);
    expect(a.code).toBe(1);
    expect(a.stderr).toContain(`qtk: error: --qconfig ${notJson}: not JSON (`);

    const badEdit = jsonFile({ moduleName: { fc: 'int4' } });
    const b = await quantize('--qconfig', badEdit);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain(`qtk: error: --qconfig ${badEdit}: moduleName.fc: `);

    const typo = jsonFile({ moduleName: { fc1: 'high-precision-output' } });
    const c = await quantize('--qconfig', typo);
    expect(c.code).toBe(2);
    expect(c.stderr).toContain(`qtk: error: --qconfig ${typo}: no module named 'fc1' in the model; its modules are: `);
    expect(c.stderr).toContain("did you mean 'fc'?");

    const badTable = jsonFile({ version: 1, nodes: [{ name: 'relu', int16Gain: 'big' }] });
    const d = await quantize('--sensitivity', badTable, '--budget', '1');
    expect(d.code).toBe(1);
    expect(d.stderr).toContain(`qtk: error: --sensitivity ${badTable}: nodes.0.int16Gain: `);

    const unknownNode = jsonFile({ version: 1, nodes: [{ name: 'conv9', sensitivity: 1, int16Gain: 1 }] });
    const e = await quantize('--sensitivity', unknownNode, '--budget', '1');
    expect(e.code).toBe(2);
    expect(e.stderr).toContain(`--sensitivity ${unknownNode}: no module named 'conv9' in the model`);

    const f = await quantize('--sensitivity', jsonFile({ version: 1, nodes: [] }));
    expect(f.code).toBe(2);
    expect(f.stderr).toContain('--sensitivity needs --budget N');
    const g = await quantize('--budget', '2');
    expect(g.code).toBe(2);
    expect(g.stderr).toContain('--budget needs --sensitivity FILE');
  });
});
