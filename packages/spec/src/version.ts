// The version of the QTK packages (one `fixed` group: they are released together, docs/releasing.md), written by
// `pnpm version-packages` after `changeset version`; a test checks it against every package.json.
export const QTK_VERSION = '0.3.0';

/** Compares two `major.minor.patch` versions (a pre-release suffix is ignored): negative, zero or positive. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) =>
    v
      .split('-')[0]!
      .split('.')
      .map((p) => Number.parseInt(p, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}
