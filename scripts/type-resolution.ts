// The types a package publishes, checked the way arethetypeswrong does (@arethetypeswrong/core, in this process:
// its CLI spent about 3 s per package starting up, 17 processes per check:packages). QTK is ESM only, so the
// `esm-only` profile: resolution for Node 16+ ESM and bundlers is checked, node10 and require() resolution are
// not (an ESM-only package fails those by design, see docs/decisions.md). No @types package is looked up.
import { checkPackage, createPackageFromTarballData, type Package } from '@arethetypeswrong/core';
import { problemKindInfo } from '@arethetypeswrong/core/problems';

const IGNORED_RESOLUTIONS: readonly string[] = ['node10', 'node16-cjs'];

/**
 * One line per problem arethetypeswrong finds in `pkg` under the esm-only profile; empty when its types resolve.
 * `excludeEntrypoints`: subpaths that are not modules (a wasm or JSON asset).
 */
export async function typeResolutionProblems(
  pkg: Package,
  excludeEntrypoints: readonly string[] = [],
): Promise<string[]> {
  const result = await checkPackage(pkg, { excludeEntrypoints: [...excludeEntrypoints] });
  if (!result.types) return [`${pkg.packageName}: ships no types`];
  return result.problems
    .filter((p) => !('resolutionKind' in p) || !IGNORED_RESOLUTIONS.includes(p.resolutionKind))
    .map((p) => {
      const where =
        'entrypoint' in p ? ` (${p.entrypoint}, ${p.resolutionKind})` : 'fileName' in p ? ` (${p.fileName})` : '';
      return `${problemKindInfo[p.kind].title}${where}: ${problemKindInfo[p.kind].shortDescription}`;
    });
}

/** The same for a packed tarball (.tgz bytes). */
export function tarballTypeProblems(
  tarball: Uint8Array,
  excludeEntrypoints: readonly string[] = [],
): Promise<string[]> {
  return typeResolutionProblems(createPackageFromTarballData(tarball), excludeEntrypoints);
}
