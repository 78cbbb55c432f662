import { BatchNorm2d, Conv2d, Flatten, Linear, Module, ReLU, ReLU6 } from '@qtk/nn';
import {
  defineCapabilities,
  marches,
  selectDefaultMarch,
  type CapabilityTableInput,
  type MarchBackendV1,
} from '@qtk/spec';
import { add, Generator, randn, type Tensor } from '@qtk/tensor';
import { afterEach, describe, expect, it } from 'vitest';
import { fuseFx } from './fuse-fx.js';
import { fusionRefusal } from './march-fusions.js';
import { randomizeBatchNorm } from './testing/combo-net.js';
import { expectClose } from './testing/expect-close.js';

const g = new Generator(7);

/** One site per fusion kind: conv-bn-relu, conv-relu6, conv-add, linear-relu. */
class FourSites extends Module {
  readonly conv1 = new Conv2d(3, 4, 3, { padding: 1, generator: g });
  readonly bn1 = new BatchNorm2d(4);
  readonly relu1 = new ReLU();
  readonly conv2 = new Conv2d(4, 4, 3, { padding: 1, generator: g });
  readonly relu6 = new ReLU6();
  readonly conv3 = new Conv2d(4, 4, 1, { generator: g });
  readonly flatten = new Flatten();
  readonly fc = new Linear(4 * 5 * 5, 3, { generator: g });
  readonly relu2 = new ReLU();
  constructor() {
    super();
    randomizeBatchNorm(this.bn1, g);
  }
  forward(x: Tensor): Tensor {
    const a = this.relu1.call(this.bn1.call(this.conv1.call(x)));
    const b = this.relu6.call(this.conv2.call(a));
    const c = add(this.conv3.call(b), b);
    return this.relu2.call(this.fc.call(this.flatten.call(c)));
  }
}

function testMarch(id: string, ops: CapabilityTableInput['ops']): MarchBackendV1 {
  const capabilities = defineCapabilities({
    version: 1,
    activationDtypes: ['qint8'],
    weightDtypes: ['qint8'],
    weightPerChannel: true,
    ops,
  });
  return { apiVersion: 1, id, capabilities, hooks: {} };
}

/** Conv may fuse a ReLU only; no Gemm: conv-relu6, conv-add and linear-relu stay unfused. */
const reluOnly = testMarch('fusion-test-relu-only', [{ op: 'Conv', fusable: ['Relu'] }, { op: 'Add' }]);
/** Conv without a `fusable` list: only BN absorption. */
const noFusable = testMarch('fusion-test-no-fusable', [{ op: 'Conv' }, { op: 'Gemm' }]);
const everything = testMarch('fusion-test-all', [
  { op: 'Conv', fusable: ['BatchNormalization', 'Add', 'Relu', 'Clip'] },
  { op: 'Gemm', fusable: ['Relu'] },
]);

function fusedRules(model: Module, march?: string | MarchBackendV1): string[] {
  let rules: string[] = [];
  const x = randn([2, 3, 5, 5], { generator: new Generator(1) });
  const gm = fuseFx(model, {
    ...(march !== undefined ? { march } : {}),
    onFused: (a) => (rules = a.map((r) => r.rule)),
  });
  expectClose(gm.call(x), model.call(x)); // whatever is fused, the model computes the same
  return rules.sort();
}

afterEach(() => {
  selectDefaultMarch(null);
});

describe('fuseFx with a march', () => {
  const model = new FourSites().eval();

  it('without a march (and none selected) applies every pattern', () => {
    expect(fusedRules(model)).toEqual(['conv2d_add', 'conv2d_bn_relu', 'conv2d_relu', 'linear_relu']);
  });

  it("skips a fusion whose fused op the base's `fusable` does not list, and every fusion of a base the table lacks", () => {
    expect(fusedRules(model, reluOnly)).toEqual(['conv2d_bn_relu']);
    expect(fusedRules(model, everything)).toEqual(['conv2d_add', 'conv2d_bn_relu', 'conv2d_relu', 'linear_relu']);
  });

  it('absorbs a BatchNorm whatever `fusable` says (a float rewrite); a table without `fusable` fuses nothing else', () => {
    const gm = fuseFx(model, { march: noFusable });
    expect(fusedRules(model, noFusable)).toEqual(['conv2d_bn']);
    expect(gm.getSubmodule('relu1')).toBeInstanceOf(ReLU);
  });

  it('takes a registered march id, and defaults to the selected march', () => {
    marches.register(reluOnly);
    try {
      expect(fusedRules(model, 'fusion-test-relu-only')).toEqual(['conv2d_bn_relu']);
      selectDefaultMarch('fusion-test-relu-only');
      expect(fusedRules(model)).toEqual(['conv2d_bn_relu']);
      expect(fusedRules(model, everything)).toHaveLength(4); // an explicit march wins over the selected one
    } finally {
      marches.unregister(reluOnly.id);
    }
    expect(() => fuseFx(model, { march: 'fusion-test-relu-only' })).toThrow(/no march named 'fusion-test-relu-only'/);
  });

  it('fusionRefusal names the base op and the unlisted ops', () => {
    expect(fusionRefusal(reluOnly.capabilities, { base: 'Gemm', fused: ['Relu'] })).toBe(
      "'Gemm' is not in the capability table",
    );
    expect(fusionRefusal(reluOnly.capabilities, { base: 'Conv', fused: ['BatchNormalization', 'Add', 'Clip'] })).toBe(
      "'Conv' does not list 'Add', 'Clip' as fusable",
    );
    expect(fusionRefusal(reluOnly.capabilities, { base: 'Conv', fused: ['BatchNormalization', 'Relu'] })).toBeNull();
  });
});
