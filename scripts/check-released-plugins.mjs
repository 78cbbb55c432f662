// Plain Node ESM, run by scripts/pack-and-install.ts in the fresh project where the packed release is installed,
// beside two plugin packages as published for other QTK versions (scripts/released-plugins/): one built against QTK
// 0.1.0's plugin contract (version 1), which must load and calibrate, and one written for a later contract, which
// must be refused with a message naming the QTK it needs (docs/releasing.md).
import assert from 'node:assert/strict';
import { calibrate, prepareQatFx } from '@qtk/core';
import { getDefaultQconfig, setFakeQuantize } from '@qtk/fake-quant';
import '@qtk/march-bayes';
import { DeQuantStub, Linear, Module, QuantStub } from '@qtk/nn';
import { PluginContractError, QTK_VERSION, registerPluginModule, resolveQuantRange, scaleFromRange } from '@qtk/spec';
import { Generator, rand } from '@qtk/tensor';

const load = (s) => import(s);

const plugin = await registerPluginModule('qtk-observer-half-range', load);
class Tiny extends Module {
  quant = new QuantStub();
  fc = new Linear(8, 2, { generator: new Generator(1) });
  dequant = new DeQuantStub();
  forward(x) {
    return this.dequant.call(this.fc.call(this.quant.call(x)));
  }
}
const qconfig = getDefaultQconfig('fake_quant', 'fake_quant', 'half_range', 'min_max');
const gm = prepareQatFx(new Tiny().eval(), { global: qconfig }, { march: 'bayes', onWarning: () => {} });
const x = rand([4, 8], { low: -2, high: 2, generator: new Generator(2) });
calibrate(gm, [x], { onWarning: () => {} });
setFakeQuantize(gm, 'VALIDATION');
const absMax = Math.max(...Array.from(x.values(), Math.abs));
const expected = scaleFromRange(-absMax / 2, absMax / 2, resolveQuantRange('qint8', null, null));
const scale = gm.getSubmodule('quant').activationPostProcess.scale.values()[0];
assert.equal(scale, Math.fround(expected), `the input scale ${scale} is not half_range's ${expected}`);
console.log(`${plugin.name}: loaded on QTK ${QTK_VERSION}; its observer calibrated the input scale to ${scale}`);

const refused = await registerPluginModule('qtk-observer-next-contract', load).catch((e) => e);
assert.ok(refused instanceof PluginContractError, `expected a PluginContractError, got ${refused}`);
assert.match(refused.message, /written for plugin contract version 2 \(QTK 1\.0\.0 or later\); this QTK \(/);
console.log(`qtk-observer-next-contract: refused: ${refused.message}`);
