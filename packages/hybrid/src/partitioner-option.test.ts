// prepareQatFx's hybrid mode takes its partition as a value ({ hybrid: true, partitioner }): importing
// @qtk/hybrid installs nothing, and a prepare that asks for one without the other says what to pass.
import { DEFAULT_PREPARE_PASSES, type PreparePass, prepareQatFx } from '@qtk/core';
import { defaultQatQconfig } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import '@qtk/march-bernoulli2';
import { InvalidArgumentError } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { checkDeployDevice, hybridPartitioner } from './index.js';
import { MiddleOpsNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };
const qconfig = { global: defaultQatQconfig };
const devices = (gm: GraphModule) => checkDeployDevice(gm).nodes.map((n) => [n.name, n.device, n.reason]);
const thrown = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
};

describe("prepareQatFx's partitioner option", () => {
  it('{ hybrid: true } alone is refused, naming the value to import and pass (importing @qtk/hybrid installs nothing)', () => {
    const e = thrown(() => prepareQatFx(new MiddleOpsNet(), qconfig, { march: 'bernoulli2', hybrid: true, ...quiet }));
    expect(e).toBeInstanceOf(InvalidArgumentError);
    expect((e as InvalidArgumentError).code).toBe('E_INVALID_ARGUMENT');
    expect(e.message).toBe(
      "prepareQatFx: { hybrid: true } needs the pass that puts each node on the BPU or the CPU: import { hybridPartitioner } from '@qtk/hybrid' and pass { hybrid: true, partitioner: hybridPartitioner }",
    );
  });

  it('a partitioner without hybrid, and a partitioner that is not a pass, are refused', () => {
    expect(() =>
      prepareQatFx(new MiddleOpsNet(), qconfig, { march: 'bernoulli2', partitioner: hybridPartitioner, ...quiet }),
    ).toThrow('prepareQatFx: partitioner is only run in hybrid mode; pass { hybrid: true, partitioner }');
    for (const bad of [true, null, { name: 'p' }, () => {}])
      expect(() =>
        prepareQatFx(new MiddleOpsNet(), qconfig, {
          march: 'bernoulli2',
          hybrid: true,
          partitioner: bad as unknown as PreparePass,
          ...quiet,
        }),
      ).toThrow(
        /partitioner must be a prepare pass \{ name, run\(ctx\) \}, such as hybridPartitioner from '@qtk\/hybrid'/,
      );
  });

  it('runs the given pass right after the march rewrites, once, and that pass alone decides the devices', () => {
    const seen: string[][] = [];
    let runs = 0;
    const recording: PreparePass = {
      name: 'recording-partition',
      run: (ctx) => {
        runs++;
        hybridPartitioner.run(ctx);
      },
    };
    const qat = prepareQatFx(new MiddleOpsNet(), qconfig, {
      march: 'bernoulli2',
      hybrid: true,
      partitioner: recording,
      passes: (defaults) => {
        seen.push(defaults.map((p) => p.name));
        return defaults;
      },
      ...quiet,
    });
    expect(runs).toBe(1);
    const names = DEFAULT_PREPARE_PASSES.map((p) => p.name);
    expect(seen).toEqual([[names[0], 'recording-partition', ...names.slice(1)]]);
    expect(names[0]).toBe('march-rewrites');
    const direct = prepareQatFx(new MiddleOpsNet(), qconfig, {
      march: 'bernoulli2',
      hybrid: true,
      partitioner: hybridPartitioner,
      ...quiet,
    });
    expect(devices(qat)).toEqual(devices(direct));
    expect(devices(qat).filter(([, d]) => d === 'CPU')).toEqual([
      ['hswish', 'CPU', 'op not in table'],
      ['hsigmoid', 'CPU', 'op not in table'],
      ['selu', 'CPU', 'op not in table'],
    ]);
    // a partitioner that leaves every node alone gives no CPU node: the partition is the value's, not a global's
    const none = prepareQatFx(new MiddleOpsNet(), qconfig, {
      march: 'bernoulli2',
      hybrid: true,
      partitioner: { name: 'no-partition', run: () => {} },
      ...quiet,
    });
    expect(checkDeployDevice(none).nodes.filter((n) => n.device === 'CPU')).toEqual([]);
  });
});
