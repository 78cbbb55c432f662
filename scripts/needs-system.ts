// Vitest helpers for tests that need a system requirement (scripts/system-requirements.ts). When the machine
// lacks it, the test (or one placeholder for a suite) is skipped with a note naming what is missing and the
// command that installs it; scripts/skip-reporter.ts lists every such note at the end of the run.
import { describe, it, type TestContext } from 'vitest';
import { missingNote, type RequirementId, requirementOf, SKIPPED_CHECK } from './system-requirements.js';

const present = new Map<RequirementId, boolean>();

/** True when the machine has `id` (probed once per test file). */
export function has(id: RequirementId): boolean {
  let p = present.get(id);
  if (p === undefined) {
    p = requirementOf(id).isPresent();
    present.set(id, p);
  }
  return p;
}

/** `describe(name, body)` when the machine has `id`; else one skipped test named `name` with the note. */
export function describeNeeding(id: RequirementId, name: string, body: () => void): void {
  if (has(id)) describe(name, body);
  else it(name, (ctx) => ctx.skip(missingNote(id)));
}

/** `it(name, body)` when the machine has `id`; else the test is skipped with the note. */
export function itNeeding(
  id: RequirementId,
  name: string,
  body: (ctx: TestContext) => unknown,
  timeout?: number,
): void {
  if (has(id)) it(name, body, timeout);
  else it(name, (ctx) => ctx.skip(missingNote(id)));
}

/**
 * For a check inside a larger test: runs `check` when the machine has `id`, else records the note on the test
 * (the skip reporter lists it), so the rest of the test still runs and the missing check is not silent.
 */
export async function checkNeeding(ctx: TestContext, id: RequirementId, check: () => void): Promise<void> {
  if (has(id)) check();
  else await ctx.annotate(missingNote(id), SKIPPED_CHECK);
}
