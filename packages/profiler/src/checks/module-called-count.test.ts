import { symbolicTrace } from '@qtk/ir';
import { describe, expect, it } from 'vitest';
import { getModuleCalledCount } from './module-called-count.js';
import { SharedConvNet, UnfusedNet } from '@qtk/test-models';

describe('getModuleCalledCount', () => {
  it('counts each module call and lists the shared module with its calling nodes', () => {
    const result = getModuleCalledCount(new SharedConvNet());
    expect(result.modules.map((m) => [m.name, m.type, m.count])).toEqual([
      ['quant', 'QuantStub', 1],
      ['conv', 'Conv2d', 2],
      ['relu', 'ReLU', 1],
      ['bn', 'BatchNorm2d', 1],
      ['dequant', 'DeQuantStub', 1],
    ]);
    expect(result.shared).toEqual([{ name: 'conv', type: 'Conv2d', count: 2, nodes: ['conv', 'conv_1'] }]);
    expect(result.version).toBe(1);
  });

  it('takes a traced GraphModule as well and finds no shared module in a model without one', () => {
    const result = getModuleCalledCount(symbolicTrace(new UnfusedNet()));
    expect(result.shared).toEqual([]);
    expect(result.modules.every((m) => m.count === 1)).toBe(true);
    expect(result.modules).toHaveLength(10);
  });
});
