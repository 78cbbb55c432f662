// qtk export, qtk eval --engine and qtk compare: a fixed-point model file exported to integer ONNX,
// run in onnxruntime-node and compared value by value with QTK, in-process and through the real process.
import '@qtk/march-bayes';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { saveModelFileSync } from '@qtk/core/node';
import { getDefaultQatQconfig } from '@qtk/fake-quant';
import { type GraphModule, symbolicTrace } from '@qtk/ir';
import { Flatten, Module, Softplus } from '@qtk/nn';
import { decodeModel, encodeModel, exportOnnxBytes, NODE_VALUES_KEY } from '@qtk/onnx';
import { importOnnx } from '@qtk/onnx/node';
import { argmax, Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadSamples } from './data/samples.js';
import {
  correctCount,
  npyBytes,
  pngBytes,
  PoolScores,
  run,
  runProcess,
  tempDir,
  TinyNet,
  writeOnnx,
} from './testing/fixtures.js';

const N = 20;
/** Samples 0..ZEROS-1 are negative everywhere: ReLU makes their scores all zero. */
const ZEROS = 5;
let dir: string;
let data: string;
let inputs: Tensor;
let labels: number[];
let fixed: GraphModule;
let fixedPath: string;
let qatPath: string;

beforeAll(() => {
  dir = tempDir();
  const g = new Generator(11);
  const x = rand([N, 10, 2, 2], { low: -2, high: 2, generator: g });
  const v = x.values() as Float32Array;
  for (let i = 0; i < ZEROS * 40; i++) v[i] = -Math.abs(v[i]!) - 0.01;
  inputs = x;
  labels = Array.from({ length: N }, (_, i) => (i * 3) % 10);
  data = join(dir, 'scores');
  mkdirSync(data);
  writeFileSync(join(data, 'x.npy'), npyBytes([N, 10, 2, 2], v));
  writeFileSync(join(data, 'labels.txt'), `${labels.join('\n')}\n`);

  const prepared = prepareQatFx(new PoolScores(), { global: getDefaultQatQconfig() }, { march: 'bayes' });
  calibrate(prepared, [rand([16, 10, 2, 2], { low: -1, high: 1, generator: g })]);
  qatPath = join(dir, 'pool-qat.qtk');
  saveModelFileSync(prepared, qatPath, { meta: { inputShape: [null, 10, 2, 2] } });
  fixed = convertFx(prepared, { march: 'bayes' });
  fixedPath = join(dir, 'pool-bayes.qtk');
  saveModelFileSync(fixed, fixedPath, { meta: { inputShape: [null, 10, 2, 2] } });
});

/** The file with `scale` (the name of a scalar float32 or float64 initializer) multiplied by `factor`. */
function withScaleTimes(bytes: Uint8Array, scale: string, factor: number): Uint8Array {
  const m = decodeModel(bytes);
  const init = m.graph!.initializer!.find((t) => t.name === scale);
  if (!init) throw new Error(`no initializer '${scale}' in ${m.graph!.initializer!.map((t) => t.name).join(', ')}`);
  const raw = init.raw_data!;
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (init.data_type === 11) view.setFloat64(0, view.getFloat64(0, true) * factor, true);
  else view.setFloat32(0, view.getFloat32(0, true) * factor, true);
  return encodeModel(m);
}

describe('qtk export', () => {
  it('exports a fixed-point model file to integer ONNX that onnxruntime runs with QTK accuracy', async () => {
    const kinds = fixed.graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => fixed.getSubmodule(n.target).constructor.name);
    expect(kinds).toEqual(['Quantize', 'FixedValueOp', 'FixedValueOp', 'FixedValueOp', 'Dequantize']);
    const out = join(dir, 'pool-bayes.onnx');
    const r = await run('export', fixedPath, '--out', out, '--opset', '17');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`model:     ${fixedPath} (fixed-point, march bayes)`);
    expect(r.stdout).toContain('input:     [batch, 10, 2, 2]');
    expect(r.stdout).toMatch(new RegExp(`^written:   ${out} \\(\\d+ bytes, integer ONNX\\)$`, 'm'));
    const m = decodeModel(readFileSync(out));
    expect(m.opset_import![0]!.version).toBe(17);
    expect(r.stdout).toContain(`nodes:     ${m.graph!.node!.length} ONNX nodes, opset 17`);
    expect(m.graph!.input![0]!.type!.tensor_type!.shape!.dim!.map((d) => d.dim_value ?? d.dim_param)).toEqual([
      'batch',
      10,
      2,
      2,
    ]);

    // eval runs the integer file in onnxruntime by default, with the fixed-point model's accuracy
    const want = correctCount(fixed, inputs, labels);
    const e = await run('eval', out, '--data', data, '--batch', '7');
    expect(e.stderr).toBe('');
    expect(e.code).toBe(0);
    expect(e.stdout).toContain(`model:     ${out} (integer ONNX)`);
    expect(e.stdout).toMatch(/^runtime: {3}onnxruntime-node 1\.\d+\.\d+$/m);
    expect(e.stdout).toContain(`accuracy:  ${((100 * want) / N).toFixed(2)}% (${want} / ${N})`);
    expect(e.stdout).toMatch(/^time: {6}\d+\.\d\d s \(forward passes \d+\.\d\d s\)$/m);
    // the model file itself: QTK's kernels (qtk), its integer ONNX once the first two batches gave identical
    // outputs (ort), or the faster of the two there (auto); the same accuracy on each
    const own = await run('eval', fixedPath, '--data', data, '--engine', 'qtk', '--batch', '7');
    expect(own.stdout).toMatch(/^runtime: {3}qtk$/m);
    expect(own.stdout).toContain(`(${want} / ${N})`);
    const proven = "identical outputs on the first 2 batches, \\d+\\.\\d\\d× QTK's speed there";
    const forced = await run('eval', fixedPath, '--data', data, '--engine', 'ort', '--batch', '7');
    expect(forced.stderr).toBe('');
    expect(forced.stdout).toMatch(
      new RegExp(`^runtime: {3}onnxruntime-node 1\\.\\d+\\.\\d+, the model's integer ONNX \\(${proven}\\)$`, 'm'),
    );
    expect(forced.stdout).toContain(`(${want} / ${N})`);
    const auto = await run('eval', fixedPath, '--data', data, '--batch', '7');
    expect(auto.stdout).toMatch(
      new RegExp(
        `^runtime: {3}(onnxruntime-node 1\\.\\d+\\.\\d+, the model's integer ONNX|qtk \\(its integer ONNX in onnxruntime-node 1\\.\\d+\\.\\d+:) \\(?${proven}\\)$`,
        'm',
      ),
    );
    expect(auto.stdout).toContain(`(${want} / ${N})`);
    expect(auto.stdout).not.toContain('note:');

    // QTK cannot import it, and says why
    const q = await run('eval', out, '--data', data, '--engine', 'qtk');
    expect(q.code).toBe(1);
    expect(q.stderr).toMatch(
      /^qtk: error: --engine qtk cannot run .*pool-bayes\.onnx: it is integer ONNX \(\d+ integer Cast nodes\), and QTK imports float ONNX only\. Run it with --engine ort/,
    );
    expect(q.stderr).not.toMatch(/\n\s+at /);
  });

  it('exports float ONNX and QTK float model files; --engine ort and qtk agree on them, fixed batch sizes too', async () => {
    const g = new Generator(4);
    const tiny = writeOnnx(join(dir, 'tiny.onnx'), new TinyNet(g));
    const evalDir = join(dir, 'mnist-like');
    mkdirSync(evalDir);
    const x = rand([N, 1, 28, 28], { low: -1, high: 1, generator: g });
    writeFileSync(join(evalDir, 'x.npy'), npyBytes([N, 1, 28, 28], x.values() as Float32Array));
    writeFileSync(join(evalDir, 'labels.txt'), `${labels.join('\n')}\n`);
    const want = correctCount(importOnnx(tiny), x, labels);

    const again = join(dir, 'tiny-11.onnx');
    const r = await run('export', tiny, '--out', again, '--opset', '11');
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`model:     ${tiny} (float, ONNX)`);
    expect(r.stdout).toMatch(/\(\d+ bytes, float ONNX\)/);
    expect(decodeModel(readFileSync(again)).opset_import![0]!.version).toBe(11);

    // a float ONNX file runs in onnxruntime by default, in QTK on request: the same accuracy
    const viaQtk = await run('eval', again, '--data', evalDir, '--engine', 'qtk');
    expect(viaQtk.stdout).toContain('runtime:   qtk');
    expect(viaQtk.stdout).toContain(`(${want} / ${N})`);
    const viaOrt = await run('eval', again, '--data', evalDir, '--batch', '6');
    expect(viaOrt.stderr).toBe('');
    expect(viaOrt.stdout).toMatch(/^runtime: {3}onnxruntime-node /m);
    expect(viaOrt.stdout).toContain(`(${want} / ${N})`);

    // a float file onnxruntime refuses (an IR version from the future) is imported into QTK, with a note saying why
    const future = join(dir, 'tiny-ir99.onnx');
    writeFileSync(future, encodeModel({ ...decodeModel(readFileSync(again)), ir_version: 99 }));
    const fellBack = await run('eval', future, '--data', evalDir);
    expect(fellBack.code).toBe(0);
    expect(fellBack.stdout).toContain('runtime:   qtk');
    expect(fellBack.stdout).toContain(`(${want} / ${N})`);
    expect(fellBack.stdout).toMatch(
      /^note: {6}onnxruntime-node cannot load .*tiny-ir99\.onnx.*: imported into QTK instead$/m,
    );
    const strict = await run('eval', future, '--data', evalDir, '--engine', 'ort');
    expect([strict.code, strict.stderr]).toEqual([1, expect.stringContaining('onnxruntime-node cannot load')]);

    // a file with a fixed batch of 3 runs 3 at a time (20 = 6·3 + 2, the last group padded)
    const fixedBatch = join(dir, 'tiny-b3.onnx');
    writeFileSync(
      fixedBatch,
      exportOnnxBytes(symbolicTrace(new TinyNet(new Generator(4))), [rand([3, 1, 28, 28])], { dynamicBatch: false }),
    );
    const b3 = await run('eval', fixedBatch, '--data', evalDir, '--engine', 'ort', '--batch', '7');
    expect(b3.stderr).toBe('');
    expect(b3.stdout).toContain(`(${want} / ${N})`);

    // a float QTK model file (shape from its meta)
    const floatQtk = join(dir, 'tiny-float.qtk');
    saveModelFileSync(importOnnx(tiny), floatQtk, { kind: 'float', meta: { inputShape: [null, 1, 28, 28] } });
    const f = await run('export', floatQtk, '--out', join(dir, 'tiny-float.onnx'));
    expect(f.stderr).toBe('');
    expect(f.stdout).toContain(`model:     ${floatQtk} (float)`);
    expect(f.stdout).toMatch(/float ONNX\)$/m);
    const fe = await run('eval', join(dir, 'tiny-float.onnx'), '--data', evalDir);
    expect(fe.stdout).toContain(`(${want} / ${N})`);
    // the float model file itself: exported and run in onnxruntime-node by default, QTK's kernels with --engine qtk
    for (const [engine, runtime] of [
      ['auto', /^runtime: {3}onnxruntime-node 1\.\d+\.\d+$/m],
      ['ort', /^runtime: {3}onnxruntime-node 1\.\d+\.\d+$/m],
      ['qtk', /^runtime: {3}qtk$/m],
    ] as const) {
      const m = await run('eval', floatQtk, '--data', evalDir, '--engine', engine, '--batch', '7');
      expect(m.stderr).toBe('');
      expect(m.stdout).toMatch(runtime);
      expect(m.stdout).not.toContain('note:');
      expect(m.stdout).toContain(`(${want} / ${N})`);
    }
  });

  it('the image preprocessing a model file saved travels into the ONNX file, and eval in onnxruntime uses it', async () => {
    const images = join(dir, 'images');
    mkdirSync(images);
    const g = new Generator(8);
    const files: string[] = [];
    for (let i = 0; i < 12; i++) {
      const px = rand([28 * 28], { low: 0, high: 256, generator: g }).values() as Float32Array;
      const rgba = new Uint8Array(28 * 28 * 4);
      px.forEach((v, j) => {
        rgba.fill(Math.floor(v), 4 * j, 4 * j + 3);
        rgba[4 * j + 3] = 255;
      });
      files.push(join(images, `i${String(i).padStart(2, '0')}.png`));
      writeFileSync(files[i]!, pngBytes(28, 28, rgba));
    }
    const preprocess = { mean: [0.5], std: [0.25] };
    const net = importOnnx(writeOnnx(join(dir, 'tiny-pre-source.onnx'), new TinyNet(new Generator(9))));
    // the labels are the network's predictions under the saved preprocessing: 100% only with it
    const x = loadSamples(files, [1, 28, 28], preprocess).tensor;
    const pred = argmax(noGrad(() => net.call(x)) as Tensor, 1).values();
    writeFileSync(join(images, 'labels.txt'), Array.from(pred).join('\n'));
    const path = join(dir, 'tiny-pre.qtk');
    saveModelFileSync(net, path, { kind: 'float', meta: { inputShape: [null, 1, 28, 28], preprocess } });
    const out = join(dir, 'tiny-pre.onnx');
    expect((await run('export', path, '--out', out)).code).toBe(0);
    const m = decodeModel(readFileSync(out));
    expect(m.metadata_props!.map((p) => p.key)).toEqual([
      NODE_VALUES_KEY,
      'qtk.outputs',
      'qtk.model_sha256',
      'qtk.preprocess',
    ]);
    expect(JSON.parse(m.metadata_props![3]!.value!)).toEqual(preprocess);

    const viaOrt = await run('eval', out, '--data', images, '--engine', 'ort');
    expect(viaOrt.stderr).toBe('');
    expect(viaOrt.stdout).toContain('accuracy:  100.00% (12 / 12)');
    expect((await run('eval', path, '--data', images)).stdout).toContain('accuracy:  100.00% (12 / 12)');
    // the options still override it, and then the predictions change
    const other = await run('eval', out, '--data', images, '--engine', 'ort', '--mean', '0', '--std', '1');
    expect(other.stdout).not.toContain('(12 / 12)');
  });

  it('a QAT model file becomes QDQ ONNX that onnxruntime evaluates', async () => {
    const out = join(dir, 'pool-qat.onnx');
    const r = await run('export', qatPath, '--out', out);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/QDQ ONNX\)$/m);
    const ops = decodeModel(readFileSync(out)).graph!.node!.map((n) => n.op_type);
    expect(ops).toContain('QuantizeLinear');
    expect(ops).toContain('DequantizeLinear');
    // The scales file beside it names every dequantized tensor with its scale and dtype.
    expect(r.stdout).toContain(`scales:    ${out}.scales.json`);
    const scales = JSON.parse(readFileSync(`${out}.scales.json`, 'utf8'));
    expect(scales.format).toBe('qtk.qdq-scales');
    const entries = Object.values(scales.tensors) as { dtype: string; scale: number[] }[];
    expect(entries.length).toBeGreaterThan(0);
    for (const t of entries) expect(t.scale.every((v) => v > 0)).toBe(true);
    const e = await run('eval', out, '--data', data);
    expect(e.code).toBe(0);
    expect(e.stdout).toContain('(QDQ ONNX)');
    expect(e.stdout).toMatch(/^runtime: {3}onnxruntime-node /m);
  });

  it('a model without an ONNX form: a clean error, and an existing --out file is left as it was', async () => {
    class SoftplusNet extends Module {
      readonly sp = new Softplus({ beta: 2 });
      readonly flat = new Flatten();
      forward(x: Tensor): Tensor {
        return this.flat.call(this.sp.call(x));
      }
    }
    const path = join(dir, 'softplus.qtk');
    saveModelFileSync(symbolicTrace(new SoftplusNet()), path, { kind: 'float', meta: { inputShape: [null, 10] } });
    const out = join(dir, 'existing.onnx');
    writeFileSync(out, 'keep me');
    const r = await run('export', path, '--out', out);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `qtk: error: cannot export ${path} (float): exportOnnx: Softplus 'sp' has beta 2; ONNX Softplus has beta 1; nothing written\n`,
    );
    expect(readFileSync(out, 'utf8')).toBe('keep me');
  });

  it('usage errors exit 2', async () => {
    const noOut = await run('export', fixedPath);
    expect([noOut.code, noOut.stderr]).toEqual([2, expect.stringContaining('missing --out FILE')]);
    const opset = await run('export', fixedPath, '--out', join(dir, 'x.onnx'), '--opset', '10');
    expect([opset.code, opset.stderr]).toEqual([
      2,
      expect.stringContaining("'--opset' must be an integer from 11 to 21"),
    ]);
    const self = await run('export', fixedPath, '--out', fixedPath);
    expect([self.code, self.stderr]).toEqual([2, expect.stringContaining('is the input model')]);
    const bad = await run('eval', fixedPath, '--data', data, '--engine', 'tvm');
    expect([bad.code, bad.stderr]).toEqual([
      2,
      expect.stringContaining("--engine must be one of auto, ort, qtk, got 'tvm'"),
    ]);
    const noShape = join(dir, 'no-shape.qtk');
    saveModelFileSync(fixed, noShape);
    const shape = await run('export', noShape, '--out', join(dir, 'y.onnx'));
    expect([shape.code, shape.stderr]).toEqual([
      2,
      `qtk: error: ${noShape} does not record its input shape; pass --input-shape N,C,H,W\n`,
    ]);
    const given = await run('export', noShape, '--out', join(dir, 'y.onnx'), '--input-shape', '1,10,2,2');
    expect(given.code).toBe(0);
  });

  it('--visualize writes the visualisation export', async () => {
    const out = join(dir, 'pool-visual.onnx');
    const r = await run('export', fixedPath, '--out', out, '--visualize');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('visualisation ONNX (not meant to run)');
    const model = decodeModel(readFileSync(out));
    const names = model.graph!.node!.map((n) => n.name);
    for (const module of ['quant', 'pool', 'relu', 'flat', 'dequant']) expect(names).toContain(module);
    expect(new Set(model.graph!.node!.map((n) => n.domain))).toEqual(new Set(['qtk']));
  });
});

describe('qtk compare', () => {
  let cmp: string;
  beforeAll(async () => {
    cmp = join(dir, 'cmp.onnx');
    const r = await run('export', fixedPath, '--out', cmp);
    if (r.code !== 0) throw new Error(r.stderr);
  });

  it('the real process, an export of the model: every value identical, exit 0', () => {
    const out = join(dir, 'cmp-process.onnx');
    const x = runProcess('export', fixedPath, '--out', out);
    expect(x.stderr).toBe('');
    expect(x.code).toBe(0);
    expect(readFileSync(out)).toEqual(readFileSync(cmp));
    const r = runProcess('compare', fixedPath, out, '--data', data, '--batch', '8');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`outputs:   100.00% bit-identical (${N} / ${N} samples)`);
    expect(r.stdout).toContain('values:    all 5 compared values identical in every batch');
    expect(r.stdout).toContain(`data:      ${N} samples of shape [10, 2, 2] from 1 file(s) in ${data}`);
    expect(r.stdout).toContain('(integer ONNX, opset 13)');
    const limited = runProcess('compare', fixedPath, out, '--data', data, '--limit', '3');
    expect(limited.stdout).toContain('outputs:   100.00% bit-identical (3 / 3 samples)');
  });

  it('the real process, a file whose dequantize scale differs: the share of identical samples, the first differing node, exit 1', () => {
    const bytes = readFileSync(cmp);
    const altered = join(dir, 'cmp-altered.onnx');
    writeFileSync(altered, withScaleTimes(bytes, 'dequant_scale', 1.5));
    const r = runProcess('compare', fixedPath, altered, '--data', data, '--batch', '7');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(1);
    // only the samples whose scores are all zero (ReLU of negative inputs) stay identical
    expect(r.stdout).toContain(`outputs:   ${((100 * ZEROS) / N).toFixed(2)}% bit-identical (${ZEROS} / ${N} samples)`);
    expect(r.stdout).toMatch(
      /^values: {4}first difference at node 'dequant' \(Dequantize, ONNX value '[^']+'\): \d+ of 70 elements differ, .* \(in the batch of samples 0\.\.6\)$/m,
    );

    // an altered input scale: the first node differs, whatever follows
    const early = join(dir, 'cmp-quant.onnx');
    writeFileSync(early, withScaleTimes(bytes, 'quant_scale', 0.75));
    const q = runProcess('compare', fixedPath, early, '--data', data);
    expect(q.code).toBe(1);
    expect(q.stdout).toMatch(/^values: {4}first difference at node 'quant' \(Quantize, /m);
  });

  it('refuses files it cannot compare', async () => {
    const m = decodeModel(readFileSync(cmp));
    m.metadata_props = m.metadata_props!.filter((p) => p.key !== NODE_VALUES_KEY);
    const plain = join(dir, 'plain.onnx');
    writeFileSync(plain, encodeModel(m));
    const r = await run('compare', fixedPath, plain, '--data', data);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${plain} has no 'qtk.node_values' metadata`);
    // a float export of the float model, and an integer file of another model (other node names)
    const float = join(dir, 'pool-float.onnx');
    writeFileSync(float, exportOnnxBytes(symbolicTrace(new PoolScores()), [rand([2, 10, 2, 2])]));
    const f = await run('compare', fixedPath, float, '--data', data);
    expect(f.code).toBe(1);
    expect(f.stderr).toBe(
      `qtk: error: ${float} is float ONNX, but ${fixedPath} is a fixed-point model, which exports as integer ONNX: compare ${fixedPath} with the file 'qtk export ${fixedPath}' writes\n`,
    );
    const renamed = decodeModel(readFileSync(cmp));
    const entry = renamed.metadata_props!.find((p) => p.key === NODE_VALUES_KEY)!;
    entry.value = entry.value!.replace('"pool"', '"pool9"');
    const other = join(dir, 'other.onnx');
    writeFileSync(other, encodeModel(renamed));
    const o = await run('compare', fixedPath, other, '--data', data);
    expect(o.code).toBe(1);
    expect(o.stderr).toContain(
      `${other} maps values of 1 node(s) ${fixedPath} does not have ('pool9'): it was exported from another model`,
    );
    // a file onnxruntime cannot load: its error, without a stack trace
    const broken = decodeModel(readFileSync(cmp));
    broken.graph!.node![0]!.op_type = 'NoSuchOp';
    const brokenPath = join(dir, 'broken.onnx');
    writeFileSync(brokenPath, encodeModel(broken));
    const b = await run('compare', fixedPath, brokenPath, '--data', data);
    expect(b.code).toBe(1);
    expect(b.stderr).toMatch(new RegExp(`^qtk: error: onnxruntime-node cannot run ${brokenPath}: .*NoSuchOp`));
    expect(b.stderr).not.toMatch(/\n\s+at |unexpected error/);
    const be = await run('eval', brokenPath, '--data', data);
    expect(be.code).toBe(1);
    expect(be.stderr).toMatch(new RegExp(`^qtk: error: onnxruntime-node cannot load ${brokenPath}: .*NoSuchOp`));
    const swapped = await run('compare', cmp, fixedPath, '--data', data);
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain('MODEL must be a QTK model file');
    const noData = await run('compare', fixedPath, cmp);
    expect([noData.code, noData.stderr]).toEqual([2, expect.stringContaining('missing --data DIR')]);
    const one = await run('compare', fixedPath);
    expect([one.code, one.stderr]).toEqual([2, expect.stringContaining('missing argument ONNX')]);
  });
});
