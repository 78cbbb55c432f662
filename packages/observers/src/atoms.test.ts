import { describe, expect, it } from 'vitest';
import { findAtoms } from './atoms.js';
import { klThresholdBin } from './kl.js';

describe('findAtoms', () => {
  it('finds single bins far above their neighbours and keeps the density under them continuous', () => {
    const counts = Array.from({ length: 64 }, (_, j) => 100 + j); // a smooth ramp
    counts[20] = 1000; // atom on top of a density of ~120
    counts[40] = 300; // 2.1 × its neighbours: not an atom
    counts[63] = 5000; // at the edge: 8 neighbours on one side
    const atoms = findAtoms(counts, 50);
    expect(atoms[20]).toBe(1000 - 120);
    expect(atoms[63]).toBe(5000 - 158.5);
    expect(Array.from(atoms).filter((a) => a > 0)).toHaveLength(2);
    // too few values to be an atom (minCount), or at most ATOM_RATIO over an empty neighbourhood
    expect(Array.from(findAtoms([0, 0, 0, 40, 0, 0, 0], 50))).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(findAtoms([0, 0, 0, 8, 0, 0, 0], 1))).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(Array.from(findAtoms([0, 0, 0, 9, 0, 0, 0], 1))).toEqual([0, 0, 0, 9, 0, 0, 0]);
  });

  it('klThresholdBin with atoms: zero atoms change nothing, an atom in range costs no divergence', () => {
    const counts = Array.from({ length: 512 }, (_, j) => Math.round(1e5 * Math.exp(-j / 40)) + 1);
    const plain = klThresholdBin(counts, 128);
    expect(klThresholdBin(counts, 128, 128, 1, new Float64Array(512))).toEqual(plain);
    const spiked = counts.slice();
    spiked[70] = spiked[70]! + 2e5;
    const atoms = new Float64Array(512);
    atoms[70] = 2e5;
    const spread = klThresholdBin(spiked, 128);
    const kept = klThresholdBin(spiked, 128, 128, 1, atoms);
    // spread over its level, the spike (5% of the data, well inside every candidate) makes merging costly:
    // the pick drops from bin 486 to 237
    expect(plain.bin).toBe(486);
    expect(spread.bin).toBe(237);
    expect(spread.divergences.at(-1)!).toBeGreaterThan(100 * plain.divergences.at(-1)!);
    // kept as its own mass it costs next to nothing: the divergences and the pick of the data without it
    expect(kept.bin).toBe(plain.bin);
    kept.divergences.forEach((d, k) => {
      expect(Math.abs(d - plain.divergences[k]!)).toBeLessThan(6e-3);
    });
  });
});
