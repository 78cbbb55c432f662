// onnx.checker in tests: skipped with a note naming python3-onnx and its install command when the machine
// lacks it (scripts/needs-system.ts), so an export test never passes without saying the check was left out.
import { expect, type TestContext } from 'vitest';
import { checkNeeding, itNeeding } from './needs-system.js';
import { findPythonWithOnnx, onnxCheck } from '@qtk/onnx/testing';

const python = findPythonWithOnnx();

/** Expects onnx.checker's full check to pass on the file; without python3-onnx, notes the check on `ctx`. */
export async function expectOnnxCheckerPasses(ctx: TestContext, path: string): Promise<void> {
  await checkNeeding(ctx, 'python3-onnx', () => expect(onnxCheck(python!, path)).toBeNull());
}

/** A test of onnx.checker: `body` gets the python3 to run it with; skipped with the note without python3-onnx. */
export function itWithOnnxChecker(name: string, body: (python: string, ctx: TestContext) => unknown): void {
  itNeeding('python3-onnx', name, (ctx) => body(python!, ctx));
}
