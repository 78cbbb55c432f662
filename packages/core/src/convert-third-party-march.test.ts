// A third-party march (the fixture package qtk-march-toy, written only against @qtk/spec and the
// peer packages) registers itself and converts models through convertFx with no change to core.
import { defaultQatQconfig } from '@qtk/fake-quant';
import { symbolicTrace, type GraphModule } from '@qtk/ir';
import { fuseFx } from '@qtk/fusion';
import * as nn from '@qtk/nn';
import { marches, opOfModule } from '@qtk/spec';
import { Generator, noGrad, rand, type Tensor } from '@qtk/tensor';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ToyLayer, ToyQuantize, ToyTensor, toyMarch } from 'qtk-march-toy';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConversionError, convertFx, QatModule, resetMarch, setMarch } from './index.js';
import { loadModelFile, saveModelFile } from './node.js';
import { calibratedQat, setBatchNormStats, thrownBy } from './testing/convert-harness.js';

class ConvNet extends nn.Module {
  readonly quant = new nn.QuantStub({ scale: 1 / 128 });
  readonly conv1 = new nn.Conv2d(2, 6, 3, { padding: 1, generator: new Generator(1) });
  readonly relu1 = new nn.ReLU();
  readonly conv2 = new nn.Conv2d(6, 4, 3, { stride: 2, padding: 1, generator: new Generator(2) });
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.conv2.call(this.relu1.call(this.conv1.call(this.quant.call(x)))));
  }
}

class MlpNet extends nn.Module {
  readonly quant = new nn.QuantStub({ scale: 1 / 128 });
  readonly fc1 = new nn.Linear(12, 16, { generator: new Generator(3) });
  readonly relu = new nn.ReLU();
  readonly fc2 = new nn.Linear(16, 5, { generator: new Generator(4) });
  readonly dequant = new nn.DeQuantStub();
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc2.call(this.relu.call(this.fc1.call(this.quant.call(x)))));
  }
}

/** Conv → BN → ReLU → Conv (stride 2) → BN: fusion makes two fused conv modules (BN folded, one with a ReLU). */
class FusedConvNet extends nn.Module {
  readonly quant = new nn.QuantStub({ scale: 1 / 128 });
  readonly conv1 = new nn.Conv2d(2, 6, 3, { padding: 1, generator: new Generator(1) });
  readonly bn1 = new nn.BatchNorm2d(6);
  readonly relu1 = new nn.ReLU();
  readonly conv2 = new nn.Conv2d(6, 4, 3, { stride: 2, padding: 1, generator: new Generator(2) });
  readonly bn2 = new nn.BatchNorm2d(4);
  readonly dequant = new nn.DeQuantStub();
  constructor() {
    super();
    setBatchNormStats([this.bn1, this.bn2], 30);
  }
  forward(x: Tensor): Tensor {
    const y = this.relu1.call(this.bn1.call(this.conv1.call(this.quant.call(x))));
    return this.dequant.call(this.bn2.call(this.conv2.call(y)));
  }
}

/** Linear → BN1d → ReLU → Linear: the first layer fuses with its BN and ReLU. */
class FusedMlpNet extends nn.Module {
  readonly quant = new nn.QuantStub({ scale: 1 / 128 });
  readonly fc1 = new nn.Linear(12, 16, { generator: new Generator(3) });
  readonly bn = new nn.BatchNorm1d(16);
  readonly relu = new nn.ReLU();
  readonly fc2 = new nn.Linear(16, 5, { generator: new Generator(4) });
  readonly dequant = new nn.DeQuantStub();
  constructor() {
    super();
    setBatchNormStats([this.bn as unknown as nn.BatchNorm2d], 40);
  }
  forward(x: Tensor): Tensor {
    return this.dequant.call(this.fc2.call(this.relu.call(this.bn.call(this.fc1.call(this.quant.call(x))))));
  }
}

const uniform = (shape: number[], seed: number): Tensor =>
  rand(shape, { generator: new Generator(seed) })
    .mul(2)
    .sub(1);

function prepared(model: nn.Module, shape: number[]): GraphModule {
  // unfused: the toy march converts Conv/Linear and ReLU one by one
  return calibratedQat(
    model.eval(),
    { global: defaultQatQconfig },
    [0, 1, 2].map((s) => uniform(shape, 10 + s)),
    { prepare: { fuse: false } },
  );
}

/** The scale of the last activation fake-quant before the DeQuantStub: one output step. */
function outputStep(gm: GraphModule, layer: string): number {
  const m = gm.getSubmodule(layer) as unknown as {
    activationPostProcess: { calculateQparams(): { scale: Float32Array } };
  };
  return m.activationPostProcess.calculateQparams().scale[0]!;
}

function fusedPrepared(model: nn.Module, shape: number[]): GraphModule {
  return calibratedQat(
    model.eval(),
    { global: defaultQatQconfig },
    [0, 1, 2].map((s) => uniform(shape, 10 + s)),
  );
}

/** Every output of `fx` within one output step of the fake-quant `gm` (most exactly equal), over three inputs. */
function expectWithinOneStep(gm: GraphModule, fx: GraphModule, shape: readonly number[], step: number): void {
  let exact = 0;
  let total = 0;
  for (const seed of [20, 21, 22]) {
    const x = uniform([...shape], seed);
    const fake = run(gm, x);
    const fixed = run(fx, x);
    expect(fixed.length).toBe(fake.length);
    for (let i = 0; i < fake.length; i++) {
      const d = Math.abs(fake[i]! - fixed[i]!);
      expect(d).toBeLessThanOrEqual(step * 1.0001);
      if (d < step / 2) exact++;
      total++;
    }
  }
  expect(exact / total).toBeGreaterThan(0.9);
}

const run = (m: GraphModule, x: Tensor) => Float32Array.from((noGrad(() => m.call(x)) as Tensor).values());

afterEach(() => resetMarch());

describe('a third-party march (qtk-march-toy)', () => {
  it('registers itself by import, and core contains no reference to it', () => {
    expect(marches.get('toy')).toBe(toyMarch);
    expect(() => marches.register(toyMarch)).not.toThrow(); // the same object twice is a no-op
    const dir = fileURLToPath(new URL('.', import.meta.url));
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts') && !n.endsWith('.test.ts'))) {
      expect(readFileSync(dir + f, 'utf8')).not.toMatch(/toy/i);
    }
  });

  it.each([
    ['Conv2d + ReLU + Conv2d', () => new ConvNet(), [4, 2, 6, 6], 'conv2'],
    ['Linear + ReLU + Linear', () => new MlpNet(), [6, 12], 'fc2'],
  ] as const)(
    'converts %s with its own integer modules, within 1 output step of the fake-quant model',
    (_, make, shape, last) => {
      setMarch('toy'); // prepare reads the toy's table too (qint8 only)
      const gm = prepared(make(), [...shape]);
      const fx = convertFx(gm, { march: 'toy' });
      expect(fx.getSubmodule('quant')).toBeInstanceOf(ToyQuantize);
      expect(fx.getSubmodule(last)).toBeInstanceOf(ToyLayer);
      let seen: unknown = null;
      fx.getSubmodule(last).registerForwardHook((_m, _a, out) => {
        seen = out;
      });
      const step = outputStep(gm, last);
      expectWithinOneStep(gm, fx, shape, step);
      expect(seen).toBeInstanceOf(ToyTensor);
      expect((seen as ToyTensor).scale).toBe(Math.fround(step));
    },
  );

  it('rejects ops and attributes outside its table, naming node, op and march, all at once', () => {
    class Bad extends nn.Module {
      readonly quant = new nn.QuantStub({ scale: 1 / 128 });
      readonly grouped = new nn.Conv2d(2, 2, 3, { padding: 1, groups: 2, generator: new Generator(5) });
      readonly sigmoid = new nn.Sigmoid();
      readonly dequant = new nn.DeQuantStub();
      forward(x: Tensor): Tensor {
        return this.dequant.call(this.sigmoid.call(this.grouped.call(this.quant.call(x))));
      }
    }
    const gm = prepared(new Bad(), [2, 2, 4, 4]);
    const err = thrownBy(() => convertFx(gm, { march: 'toy' }));
    expect(err).toBeInstanceOf(ConversionError);
    const failures = (err as ConversionError).failures;
    expect(failures.map((f) => [f.node, f.op, f.march])).toEqual([
      ['grouped', 'Conv', 'toy'],
      ['sigmoid', 'Sigmoid', 'toy'],
    ]);
    expect(failures[0]!.message).toMatch(/groups/);
    expect(failures[1]!.message).toMatch(/not in the toy capability table/);
    expect((err as Error).message).toMatch(/march 'toy' cannot convert 2 node\(s\)/);
  });

  describe('fused models, converted from ctx.op / ctx.attrs / ctx.fused only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'qtk-toy-march-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it.each([
      // a fused module takes the path of the pattern's last module
      ['Conv2d + BN + ReLU, Conv2d + BN', () => new FusedConvNet(), [4, 2, 6, 6], 'relu1', ['Conv', 'Relu'], 'bn2'],
      ['Linear + BN1d + ReLU, Linear', () => new FusedMlpNet(), [6, 12], 'relu', ['Gemm', 'Relu'], 'fc2'],
    ] as const)(
      '%s: converts within 1 output step of fake-quant, saves, and loads bit-identical',
      async (_, make, shape, fusedLayer, parts, last) => {
        setMarch('toy');
        const gm = fusedPrepared(make(), [...shape]);
        // the QAT model holds a fused module the toy has never heard of; the catalog describes it
        const qat = gm.getSubmodule(fusedLayer);
        expect(qat).toBeInstanceOf(QatModule);
        const fused = opOfModule((qat as QatModule).module)!.fused!;
        expect(fused.parts).toEqual(parts);
        expect(fused.add).toBeNull();
        expect(fused.activation).toEqual({ op: 'Relu', attrs: {} });

        const fx = convertFx(gm, { march: 'toy' });
        const layer = fx.getSubmodule(fusedLayer);
        expect(layer).toBeInstanceOf(ToyLayer);
        expect((layer as ToyLayer).config.relu).toBe(true);
        const lastLayer = fx.getSubmodule(last) as ToyLayer;
        expect(lastLayer).toBeInstanceOf(ToyLayer);
        expect(lastLayer.config.relu).toBe(false);
        expectWithinOneStep(gm, fx, shape, outputStep(gm, last));

        // saved with QTK's model file (the toy's codecs are registered by its import), loaded back
        const path = join(dir, `${fusedLayer}.qtkm`);
        await saveModelFile(fx, path); // convertFx recorded kind and march
        const loaded = await loadModelFile(path);
        expect([loaded.kind, loaded.march]).toEqual(['fixed-point', 'toy']);
        const again = loaded.model.getSubmodule(fusedLayer) as ToyLayer;
        expect(again).toBeInstanceOf(ToyLayer);
        expect(again.config).toEqual((layer as ToyLayer).config);
        expect(again.weight.values()).toEqual((layer as ToyLayer).weight.values());
        expect(again.bias.values()).toEqual((layer as ToyLayer).bias.values());
        for (const seed of [23, 24]) {
          const x = uniform([...shape], seed);
          expect(run(loaded.model, x)).toEqual(run(fx, x));
        }
        expectWithinOneStep(gm, loaded.model, shape, outputStep(gm, last));
      },
    );

    it('rejects a fused add its table does not let a layer absorb, naming the part', () => {
      class ConvAdd extends nn.Module {
        readonly quant = new nn.QuantStub({ scale: 1 / 128 });
        readonly conv = new nn.Conv2d(2, 2, 3, { padding: 1, generator: new Generator(6) });
        readonly add = new nn.FloatFunctional();
        readonly relu = new nn.ReLU();
        readonly dequant = new nn.DeQuantStub();
        forward(x: Tensor): Tensor {
          const q = this.quant.call(x);
          return this.dequant.call(this.relu.call(this.add.add(this.conv.call(q), q)));
        }
      }
      setMarch('toy');
      // prepared for the toy, fusion keeps what its table's (absent) fusable lists: the add stays an Add
      const unfused = thrownBy(() => convertFx(fusedPrepared(new ConvAdd(), [2, 2, 4, 4]), { march: 'toy' }));
      expect(unfused).toBeInstanceOf(ConversionError);
      expect((unfused as ConversionError).failures.map((f) => [f.node, f.op])).toEqual([['add_add', 'Add']]);
      // fused for a march that absorbs adds, then prepared for the toy: the toy itself refuses the part
      const fusedElsewhere = fuseFx(symbolicTrace(new ConvAdd().eval()), { march: 'bayes' });
      const gm = calibratedQat(
        fusedElsewhere,
        { global: defaultQatQconfig },
        [0, 1, 2].map((s) => uniform([2, 2, 4, 4], 10 + s)),
        { prepare: { march: 'toy', fuse: false } },
      );
      const err = thrownBy(() => convertFx(gm, { march: 'toy' }));
      expect(err).toBeInstanceOf(ConversionError);
      const failures = (err as ConversionError).failures;
      // conv + add + relu fused into one module at the add's path
      expect(failures.map((f) => [f.node, f.op])).toEqual([['add', 'Conv']]);
      expect(failures[0]!.reason).toBe('Add cannot be fused into Conv on the toy march');
    });
  });
});
