import { Conv2d, ConvTranspose1d } from '@qtk/nn';
import { describe, expect, it } from 'vitest';
import { moduleCodecs } from './module-codecs.js';

describe('the conv layer codecs', () => {
  it('store a Conv2d without outputPadding and rebuild it with the same geometry', () => {
    const conv = new Conv2d(4, 6, [3, 1], {
      stride: [2, 1],
      padding: [1, 0],
      dilation: [1, 2],
      groups: 2,
      bias: false,
    });
    const config = moduleCodecs.forModule(conv)!.config(conv);
    expect(JSON.stringify(config)).toBe(
      '{"inChannels":4,"outChannels":6,"kernelSize":[3,1],"stride":[2,1],"padding":[1,0],"dilation":[1,2],"groups":2,"bias":false}',
    );
    const rebuilt = moduleCodecs.build('Conv2d', config) as Conv2d;
    expect([rebuilt.kernelSize, rebuilt.stride, rebuilt.padding, rebuilt.dilation, rebuilt.groups]).toEqual([
      [3, 1],
      [2, 1],
      [1, 0],
      [1, 2],
      2,
    ]);
    expect(rebuilt.bias).toBeNull();
    expect(rebuilt.weight.shape).toEqual([6, 2, 3, 1]);
  });

  it('store a ConvTranspose1d with outputPadding after padding and rebuild it', () => {
    const convT = new ConvTranspose1d(2, 3, 4, { stride: 2, padding: 1, outputPadding: 1 });
    const config = moduleCodecs.forModule(convT)!.config(convT);
    expect(Object.keys(config as object).join(' ')).toBe(
      'inChannels outChannels kernelSize stride padding outputPadding dilation groups bias',
    );
    const rebuilt = moduleCodecs.build('ConvTranspose1d', config) as ConvTranspose1d;
    expect([rebuilt.stride, rebuilt.padding, rebuilt.outputPadding, rebuilt.bias !== null]).toEqual([
      [2],
      [1],
      [1],
      true,
    ]);
    expect(rebuilt.weight.shape).toEqual([2, 3, 4]);
  });
});
