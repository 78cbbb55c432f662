// qconfig setters in hybrid mode: they run after the partition, see each node's device, and a node
// on the CPU stays float whatever a setter gives it.
import { activationFakeQuantOf, defaultQconfigSetter, prepareQatFx, type QconfigSetterContext } from '@qtk/core';
import { defaultQatOutQconfig, defaultQatQconfig } from '@qtk/fake-quant';
import '@qtk/march-bernoulli2';
import { describe, expect, it } from 'vitest';
import { prepareHybrid } from './testing/prepare-hybrid.js';
import { checkDeployDevice, hybridPartitioner } from './index.js';
import { MiddleOpsNet } from '@qtk/test-models';

const quiet = { onWarning: () => {} };
const devices = (gm: Parameters<typeof checkDeployDevice>[0]) =>
  checkDeployDevice(gm).nodes.map((n) => [n.name, n.device]);

describe('qconfig setters with hybrid: true', () => {
  it('see the partition, and the partition is the one the dict form gives', () => {
    let seen: [string, string | null][] = [];
    const viaSetters = prepareQatFx(new MiddleOpsNet(), {
      march: 'bernoulli2',
      hybrid: true,
      partitioner: hybridPartitioner,
      qconfigSetter: [
        defaultQconfigSetter(),
        (ctx: QconfigSetterContext) => {
          seen = ctx.nodes.filter((n) => n.device === 'CPU').map((n) => [n.name, n.device]);
          ctx.setQconfig('selu', defaultQatQconfig); // on the CPU: ignored
        },
      ],
      ...quiet,
    });
    const viaDict = prepareHybrid(new MiddleOpsNet(), 'bernoulli2', {
      qconfigDict: { global: defaultQatQconfig, moduleName: { fc: defaultQatOutQconfig } },
    });
    expect(seen).toEqual([
      ['hswish', 'CPU'],
      ['hsigmoid', 'CPU'],
      ['selu', 'CPU'],
    ]);
    expect(devices(viaSetters)).toEqual(devices(viaDict));
    expect(activationFakeQuantOf(viaSetters, 'selu')).toBeNull();
    expect(activationFakeQuantOf(viaSetters, 'fc')).toBeNull();
    expect(activationFakeQuantOf(viaSetters, 'conv3')?.dtype).toBe('qint8');
  });
});
