// vitest orders test files by the durations it cached in the last run, longest first, so that the slowest file
// does not start last and run alone at the end. A fresh clone (CI) has no cache, and vitest then runs the
// largest files first: the 90-second training test, a small file, started near the end and made the suite
// about 90 s longer on two workers. These files, the slowest of a full run (`vitest run --reporter=json`, over
// 10 s each on two cores), start first whatever the cache says.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

export const SLOW_FILES = [
  'examples/src/reference-net.test.ts',
  'apps/cli/src/hybrid.test.ts',
  'examples/src/mobile-hybrid-net.test.ts',
  'examples/src/auto-qconfig.test.ts',
  'apps/cli/src/export-compare.test.ts',
  'apps/cli/src/run-eval-reference.test.ts',
  'zoo/slice.test.ts',
  'packages/onnx/src/fuzz/fuzz.test.ts',
  'apps/cli/src/plugin-option.test.ts',
  'apps/demo/src/demo.test.ts',
  'apps/cli/src/profile-check.test.ts',
  'apps/cli/src/multi-input.test.ts',
  'packages/core/src/model-file-config-fuzz.test.ts',
  'packages/march-bayes/src/conformance.test.ts',
  'scripts/browser-bundle.test.ts',
  'examples/src/integer-onnx.test.ts',
  'apps/cli/src/input-shape.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FILES.findIndex((p) => f.moduleId.endsWith(`/${p}`));
      return i < 0 ? SLOW_FILES.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i, r: rank(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((e) => e.f);
  }
}
