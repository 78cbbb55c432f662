/** Neighbours on each side whose median stands for the continuous density around a bin. */
export const ATOM_NEIGHBOURS = 8;
/** How many times the neighbours' median a bin must hold to be an atom. */
export const ATOM_RATIO = 8;

/**
 * The part of each bin of a fine histogram that sits on a single value repeated far more often than the
 * values around it: an atom (constant image background, padding, a saturated activation). A bin is an
 * atom when it holds more than `minCount` values and more than ATOM_RATIO times the median of its
 * ATOM_NEIGHBOURS neighbours on each side (at least one); its atom part is the excess over that median,
 * the rest counts as continuous density. Returns the atom part per bin (zeros where there is none).
 */
export function findAtoms(counts: ArrayLike<number>, minCount: number): Float64Array {
  const n = counts.length;
  const atoms = new Float64Array(n);
  const window: number[] = [];
  for (let j = 0; j < n; j++) {
    const c = counts[j]!;
    if (c <= minCount || c <= ATOM_RATIO) continue;
    window.length = 0;
    for (let k = Math.max(0, j - ATOM_NEIGHBOURS); k <= Math.min(n - 1, j + ATOM_NEIGHBOURS); k++)
      if (k !== j) window.push(counts[k]!);
    window.sort((a, b) => a - b);
    const h = window.length >> 1;
    const median = window.length % 2 ? window[h]! : (window[h - 1]! + window[h]!) / 2;
    if (c > ATOM_RATIO * Math.max(1, median)) atoms[j] = c - median;
  }
  return atoms;
}
