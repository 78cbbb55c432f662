/** Edits from `a` to `b`: insertions, deletions, substitutions and swaps of two adjacent letters ('obsrever' → 'observer' is one). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    const prev = rows[i - 1]!;
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        cur[j] = Math.min(cur[j]!, rows[i - 2]![j - 2]! + 1);
    }
    rows.push(cur);
  }
  return rows[a.length]![b.length]!;
}

/**
 * Names close to `name`, best first (at most `limit`): same letters ignoring case, one contains the
 * other, or within a third of the name's length in edits.
 */
export function closeNames(name: string, known: readonly string[], limit = 5): string[] {
  const lower = name.toLowerCase();
  const scored: [string, number][] = [];
  for (const k of known) {
    const kl = k.toLowerCase();
    const d = editDistance(lower, kl);
    if (kl === lower) scored.push([k, -2]);
    else if (lower.length >= 3 && (kl.includes(lower) || lower.includes(kl))) scored.push([k, -1 + d / 100]);
    else if (d <= Math.max(1, Math.floor(name.length / 3))) scored.push([k, d]);
  }
  return scored
    .sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))
    .slice(0, limit)
    .map(([k]) => k);
}

/** The hint an error message ends with: "; did you mean 'x'?" (or 'x' or 'y' ...) for close names, '' for none. */
export function didYouMean(close: readonly string[]): string {
  return close.length ? `; did you mean ${close.map((c) => `'${c}'`).join(' or ')}?` : '';
}
