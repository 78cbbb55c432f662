import { opOfFunction } from '@qtk/tensor';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import '../index.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

describe("the importer's functions in the op catalog", () => {
  it('each maps to its ONNX op, with the output scale prepare gives it', () => {
    const op = (name: string, ...args: unknown[]) => opOfFunction(name, { args });
    expect(op('onnx.reshape')?.op).toBe('Reshape');
    expect(op('onnx.squeeze')?.op).toBe('Squeeze');
    expect(op('onnx.globalMaxPool')).toMatchObject({ op: 'GlobalMaxPool', ownOutputScale: false });
    expect(op('onnx.reduce', null, 'mean')).toMatchObject({ op: 'ReduceMean', ownOutputScale: true });
    // the importer's ReduceMax gets its own scale, unlike the traced max
    expect(op('onnx.reduce', null, 'max')).toMatchObject({ op: 'ReduceMax', ownOutputScale: true });
    expect(op('onnx.softmaxCoerced', null, 1, false)).toMatchObject({ op: 'Softmax', attrs: { axis: 1 } });
    expect(op('onnx.softmaxCoerced', null, 1, true)).toMatchObject({ op: 'LogSoftmax', ownOutputScale: true });
    expect(op('onnx.avgPoolExcludePad', null, [3, 3])).toMatchObject({
      op: 'AveragePool',
      attrs: { kernelSize: [3, 3] },
    });
    expect(op('onnx.pad', null, [0, 0], 'edge', 0)?.attrs).toEqual({ mode: 'edge' });
    expect(op('onnx.hardSigmoid')).toMatchObject({ op: 'HardSigmoid', ownOutputScale: true });
    expect(op('onnx.clip')).toMatchObject({ op: 'Clip', ownOutputScale: false });
    expect(op('onnx.layerNormStats')).toBeNull();
  });

  it("no source outside @qtk/onnx names the importer's functions: they are known through the catalog", () => {
    const offenders: string[] = [];
    let scanned = 0;
    for (const root of ['packages', 'apps']) {
      for (const file of sourceFiles(join(REPO, root))) {
        const rel = relative(REPO, file);
        if (rel.startsWith(join('packages', 'onnx'))) continue;
        scanned++;
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/['"`]onnx\.[a-zA-Z]+/g)) offenders.push(`${rel}: ${m[0]}`);
      }
    }
    expect(scanned).toBeGreaterThan(200); // core, fixed-point, the CLI, ... were read
    expect(offenders).toEqual([]);
  });
});
