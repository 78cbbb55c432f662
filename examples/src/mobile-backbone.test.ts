// The part MobileSeNet and MobileHybridNet share: their module paths (which the weights files depend on) and the
// same weights from the same seed.
import { Generator } from '@qtk/tensor';
import { describe, expect, it } from 'vitest';
import { MobileHybridNet } from './mobile-hybrid-net.js';
import { MobileSeNet } from './mobile-se-net.js';

const backboneKeys = (tensors: Record<string, unknown>) =>
  Object.keys(tensors).filter((k) => /^(stem|block1|block2)\./.test(k));

describe('MobileBackbone', () => {
  it('keeps the children of both models in their order, the backbone first', () => {
    const se = new MobileSeNet({ generator: new Generator(7) });
    const hybrid = new MobileHybridNet({ generator: new Generator(7) });
    expect(se.namedChildren().map(([n]) => n)).toEqual([
      'quant',
      'stem',
      'block1',
      'block2',
      'head',
      'pool',
      'flatten',
      'fc',
      'dequant',
    ]);
    expect(hybrid.namedChildren().map(([n]) => n)).toEqual([
      'quant',
      'stem',
      'block1',
      'block2',
      'up',
      'cat',
      'mergeDepthwise',
      'mergePointwise',
      'pool',
      'flatten',
      'fc',
      'dequant',
    ]);
  });

  it('gives both models the same 50 backbone tensors from the same seed, under the same paths', () => {
    const se = new MobileSeNet({ generator: new Generator(7) }).stateDict().tensors;
    const hybrid = new MobileHybridNet({ generator: new Generator(7) }).stateDict().tensors;
    const keys = backboneKeys(se);
    expect(keys).toHaveLength(50);
    expect(backboneKeys(hybrid)).toEqual(keys);
    expect(keys.slice(0, 2)).toEqual(['stem.0.weight', 'stem.1.weight']);
    expect(se['stem.0.weight']!.shape).toEqual([16, 1, 3, 3]);
    expect(se['block2.project.0.weight']!.shape).toEqual([32, 64, 1, 1]);
    for (const k of keys) expect(Array.from(hybrid[k]!.values())).toEqual(Array.from(se[k]!.values()));
    // the layers after the backbone draw on from there: the classifiers differ
    expect(Array.from(hybrid['fc.weight']!.values())).not.toEqual(Array.from(se['fc.weight']!.values()));
  });
});
