import { Linear, Module, ReLU, Sequential } from '@qtk/nn';
import type { Tensor } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { findSubmodule } from './index.js';

class Block extends Module {
  readonly body = new Sequential(new Linear(2, 3), new ReLU());
  readonly head = new Linear(3, 1);
  forward(x: Tensor): Tensor {
    return this.head.call(this.body.call(x));
  }
}

describe('findSubmodule', () => {
  const root = new Block();

  it('returns the module at a dotted path, and the root for the empty path', () => {
    expect(findSubmodule(root, '')).toBe(root);
    expect(findSubmodule(root, 'head')).toBe(root.head);
    expect(findSubmodule(root, 'body.1')).toBe(root.body.getChild('1'));
    expect(findSubmodule(root, 'body.1')).toBeInstanceOf(ReLU);
    expect(findSubmodule(root, 'body.0')).toBe(root.getSubmodule('body.0'));
  });

  it('returns null where getSubmodule throws: a missing child at any depth', () => {
    for (const path of ['tail', 'body.2', 'body.0.weight.x', 'head.x', 'body..0']) {
      expect(findSubmodule(root, path)).toBeNull();
      expect(() => root.getSubmodule(path)).toThrow();
    }
  });
});
