import { spawnSync } from 'node:child_process';

/** A python3 that can `import onnx` (python3 on PATH, then Debian's /usr/bin/python3), or null. */
export function findPythonWithOnnx(): string | null {
  for (const py of ['python3', '/usr/bin/python3']) {
    const r = spawnSync(py, ['-c', 'import onnx'], { encoding: 'utf8' });
    if (r.status === 0) return py;
  }
  return null;
}

/** Runs onnx.checker (full check, with shape inference) on a file; returns null when it passes, else the message. */
export function onnxCheck(python: string, path: string): string | null {
  const code =
    'import sys, onnx\nm = onnx.load(sys.argv[1])\nonnx.checker.check_model(m, full_check=True)\nprint("ok")';
  const r = spawnSync(python, ['-c', code, path], { encoding: 'utf8' });
  return r.status === 0 ? null : (r.stderr || r.stdout).trim().split('\n').slice(-3).join('\n');
}
