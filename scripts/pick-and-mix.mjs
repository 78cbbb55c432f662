// Plain Node ESM, no TypeScript: what a user writes after `npm install @qtk/tensor @qtk/nn @qtk/core
// @qtk/fake-quant @qtk/march-bayes @qtk/onnx`. scripts/pack-and-install.ts runs it in a fresh project outside the
// repository against the packed tarballs, and in the repository against the sources, and compares the
// two printouts. It asserts on its own that the fixed-point model agrees with the fake-quant model, and that
// the model file written and read back through the ./node subpath computes the same.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calibrate, convertFx, prepareQatFx } from '@qtk/core';
import { loadModelFileSync, saveModelFileSync } from '@qtk/core/node';
import { defaultQatOutQconfig, defaultQatQconfig, setFakeQuantize } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { Conv2d, DeQuantStub, Flatten, Linear, Module, QuantStub, ReLU } from '@qtk/nn';
import { exportOnnxBytes, importOnnx } from '@qtk/onnx';
import { Generator, noGrad, randn, wasmStatus } from '@qtk/tensor';

// The tarball ships wasm/*.wasm next to dist/: the fast backend must load, not fall back to cpu.
assert.equal(wasmStatus().loaded, true, `wasm backend did not load: ${wasmStatus().reason}`);

class Tiny extends Module {
  quant = new QuantStub({ scale: 1 / 128 });
  conv;
  relu = new ReLU();
  flatten = new Flatten();
  fc;
  dequant = new DeQuantStub();
  constructor(g) {
    super();
    this.conv = new Conv2d(1, 4, 3, { padding: 1, generator: g });
    this.fc = new Linear(4 * 6 * 6, 3, { generator: g });
  }
  forward(x) {
    const y = this.relu.call(this.conv.call(this.quant.call(x)));
    return this.dequant.call(this.fc.call(this.flatten.call(y)));
  }
}

const g = new Generator(7);
const float = new Tiny(g).eval();
const batches = Array.from({ length: 3 }, () => randn([8, 1, 6, 6], { generator: g }).clamp(-1, 1));
const qat = prepareQatFx(
  float,
  { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
  { march: 'bayes', onWarning: () => {} },
);
calibrate(qat, batches);
setFakeQuantize(qat, 'VALIDATION');
const fixed = convertFx(qat, { march: 'bayes' });

const x = batches[0];
const [fq, fp, fl] = noGrad(() => [qat.call(x), fixed.call(x), float.call(x)].map((t) => Array.from(t.data)));
assert.equal(fp.length, 8 * 3);
const maxAbs = Math.max(...fl.map(Math.abs));
assert.ok(maxAbs > 0.05, `the float model's outputs are all near zero (${maxAbs}): the test would prove nothing`);
const fqGap = Math.max(...fp.map((v, i) => Math.abs(v - fq[i])));
const flGap = Math.max(...fp.map((v, i) => Math.abs(v - fl[i])));
// Fixed point follows fake quant to a few output steps, and both stay near the float model.
assert.ok(fqGap <= 0.02 * maxAbs, `fixed-point vs fake-quant: max gap ${fqGap} (outputs up to ${maxAbs})`);
assert.ok(flGap <= 0.1 * maxAbs, `fixed-point vs float: max gap ${flGap} (outputs up to ${maxAbs})`);

// The ONNX export walks the graph node by node (runNodes), which tells graph nodes from values by their class
// name: a build that renamed classes (esbuild's `class _Node`) broke it, and every export and runtime calibration
// with it, in the packages only. The float model exported and imported back computes what it computed.
const onnx = exportOnnxBytes(float, x);
const reimported = importOnnx(onnx);
const fromOnnx = noGrad(() => Array.from(reimported.call(x).data));
assert.ok(
  fromOnnx.every((v, i) => Math.abs(v - fl[i]) <= 1e-5 * maxAbs),
  'the float model exported to ONNX and imported back computes something else',
);

// The file helpers live in @qtk/core/node: the main entry bundles for a browser.
const dir = mkdtempSync(join(tmpdir(), 'qtk-pick-and-mix-'));
try {
  saveModelFileSync(fixed, join(dir, 'tiny.qtk'));
  const loaded = loadModelFileSync(join(dir, 'tiny.qtk'));
  assert.equal(loaded.kind, 'fixed-point');
  assert.deepEqual(
    noGrad(() => Array.from(loaded.model.call(x).data)),
    fp,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify({ fixed: fp, fakeQuant: fq, onnxBytes: onnx.length }));
