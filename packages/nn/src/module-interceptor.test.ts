import { tensor, type Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { Module, setModuleCallInterceptor, type ModuleCallInterceptor } from './module.js';

class Double extends Module {
  forward(x: Tensor): Tensor {
    return x.mul(2);
  }
}

describe('module call interceptor', () => {
  it('sees every call, can proceed with other arguments or replace the result, and is removable', () => {
    const m = new Double();
    const seen: Module[] = [];
    const icpt: ModuleCallInterceptor = (mod, args, proceed) => {
      seen.push(mod);
      return mod === m ? proceed([(args[0] as Tensor).add(1)]) : 'replaced';
    };
    m.registerForwardHook((_m, _a, out) => (out as Tensor).add(100));
    expect(setModuleCallInterceptor(icpt)).toBe(null);
    try {
      expect(Array.from(m.call(tensor([1])).values())).toEqual([104]); // hooks still run inside proceed
      expect(new Double().call(tensor([1]))).toBe('replaced');
    } finally {
      expect(setModuleCallInterceptor(null)).toBe(icpt);
    }
    expect(seen).toHaveLength(2);
    expect(Array.from(m.call(tensor([1])).values())).toEqual([102]);
  });
});
