// What the test suite needs from the machine beyond Node and npm: Debian packages that hold reference data
// and tools QTK is checked against. `pnpm test` installs the missing ones when it can (root, or sudo without a
// password, and apt-get); the tests that need one that is still missing skip with a note naming it and the
// command that installs it, and the run ends with that list.
import { existsSync } from 'node:fs';
import { findPythonWithOnnx } from '../packages/onnx/src/testing/python-onnx.js';

export type RequirementId = 'onnx-testdata' | 'python3-onnx' | 'chromium' | 'fashion-mnist';

export interface SystemRequirement {
  readonly id: RequirementId;
  /** The Debian package that provides it. */
  readonly debianPackage: string;
  /** What it is, for messages. */
  readonly what: string;
  /** What checks it enables, for the final list. */
  readonly neededBy: string;
  /** True when the machine has it. */
  readonly isPresent: () => boolean;
}

export const ONNX_NODE_TESTS = process.env.QTK_ONNX_NODE_TESTS ?? '/usr/share/libonnx-testdata/data/node';
export const CHROMIUM = process.env.QTK_CHROMIUM ?? '/usr/bin/chromium';
export const FASHION_MNIST_DIR = '/usr/share/datasets/fashion-mnist';

export const SYSTEM_REQUIREMENTS: readonly SystemRequirement[] = [
  {
    id: 'onnx-testdata',
    debianPackage: 'libonnx-testdata',
    what: `the ONNX backend test data (${ONNX_NODE_TESTS})`,
    neededBy: "the importer's and exporter's conformance with ONNX's own node tests",
    isPresent: () => existsSync(ONNX_NODE_TESTS),
  },
  {
    id: 'python3-onnx',
    debianPackage: 'python3-onnx',
    what: 'onnx.checker (python3 with the onnx module)',
    neededBy: 'onnx.checker on every exported file, and the onnx.proto subset against the official one',
    isPresent: () => findPythonWithOnnx() !== null,
  },
  {
    id: 'chromium',
    debianPackage: 'chromium',
    what: `Chromium (${CHROMIUM}; QTK_CHROMIUM names another binary)`,
    neededBy: 'the wasm kernels and profiler.html in a browser, and the web app end to end (pnpm test:e2e)',
    isPresent: () => existsSync(CHROMIUM),
  },
  {
    id: 'fashion-mnist',
    debianPackage: 'dataset-fashion-mnist',
    what: `the full Fashion-MNIST dataset (${FASHION_MNIST_DIR})`,
    neededBy: 'reading the real IDX files (the embedded subset covers everything else)',
    isPresent: () => existsSync(`${FASHION_MNIST_DIR}/t10k-labels-idx1-ubyte.gz`),
  },
];

export function requirementOf(id: RequirementId): SystemRequirement {
  const r = SYSTEM_REQUIREMENTS.find((q) => q.id === id);
  if (!r) throw new Error(`unknown system requirement '${id}'`);
  return r;
}

/** The command that installs the packages, as a person would type it. */
export function installCommand(packages: readonly string[]): string {
  const apt = `apt-get update && apt-get install -y ${packages.join(' ')}`;
  return process.getuid?.() === 0 ? apt : `sudo sh -c '${apt}'`;
}

/** The annotation type of a check left out inside a test for want of a system requirement. */
export const SKIPPED_CHECK = 'skipped-check';

/** The one-line note of a test skipped for want of `id`. */
export function missingNote(id: RequirementId): string {
  const r = requirementOf(id);
  return `needs ${r.what}, which this machine lacks: ${installCommand([r.debianPackage])}`;
}
