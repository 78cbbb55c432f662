// Imports each model that upgrade-opset.py wrote, runs it in QTK and in onnxruntime-node on the zoo's first
// two samples, and prints the max relative error and the GELU modules the import made. The input of the last
// node is compared too (an extra graph output): a classifier head that starts at zero (torchvision's ViT)
// outputs zeros whatever the features.
// node --conditions=qtk-source --import tsx packages/onnx/scripts/check-upgraded.ts /tmp/opset-upgrades /work/zoo-cache
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GELU } from '@qtk/nn';
import { readNpy } from '@qtk/nn/node';
import { Tensor } from '@qtk/tensor';
import * as ort from 'onnxruntime-node';
import { importOnnx } from '../src/index.js';
import { decodeModel, encodeModel } from '../src/onnx-schema.js';

const [dir, zoo] = process.argv.slice(2);
if (!dir || !zoo) throw new Error('usage: check-upgraded.ts UPGRADED_DIR ZOO_CACHE');
for (const file of readdirSync(dir)
  .filter((f) => f.endsWith('.onnx'))
  .sort()) {
  const model = file.replace(/-op\d+\.onnx$/, '');
  // the zoo's PyTorch models keep their samples in <model>/calib, the npm models in npm-data/<model>
  const samples = [join(zoo, model, 'calib', 'x.npy'), join(zoo, 'npm-data', model, 'x.npy')];
  const npy = readNpy(samples.find((f) => existsSync(f)) ?? samples[0]!);
  const sample = npy.shape.slice(1).reduce((p, d) => p * d, 1);
  const shape = [2, ...npy.shape.slice(1)];
  const data = Float32Array.from((npy.data as Float32Array).subarray(0, 2 * sample));
  const bytes = withLastInputAsOutput(readFileSync(join(dir, file)));
  try {
    const gm = importOnnx(bytes, { inputShapes: { [gm0Input(bytes)]: shape }, onWarning: () => {} });
    const gelus = [...gm.modules()].filter((m) => m instanceof GELU).length;
    const out = gm.call(new Tensor({ data, shape, dtype: 'float32' })) as Tensor | Tensor[];
    const qtk = (Array.isArray(out) ? out : [out]).map((t) => t.values() as Float32Array);
    const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
    const feeds = { [session.inputNames[0]!]: new ort.Tensor('float32', data, shape) };
    const res = await session.run(feeds);
    let diff = 0;
    let ref = 0;
    session.outputNames.forEach((n, k) => {
      const r = res[n]!.data as Float32Array;
      r.forEach((v, i) => {
        diff = Math.max(diff, Math.abs(v - qtk[k]![i]!));
        ref = Math.max(ref, Math.abs(v));
      });
    });
    const rel = diff === 0 ? 0 : diff / ref;
    console.log(`${file}: max rel error ${rel.toExponential(1)}, GELU modules ${gelus}`);
  } catch (e) {
    console.log(`${file}: FAILED ${(e as Error).message.split('\n')[0]}`);
  }
}

/** The model with the first input of its last node as a second graph output. */
function withLastInputAsOutput(bytes: Uint8Array): Uint8Array {
  const m = decodeModel(bytes);
  const g = m.graph!;
  const last = g.node![g.node!.length - 1]!;
  g.output = [...(g.output ?? []), { name: last.input![0]!, type: { tensor_type: { elem_type: 1 } } }];
  return encodeModel(m);
}

/** The model's first graph input that is not an initializer. */
function gm0Input(bytes: Uint8Array): string {
  const g = decodeModel(bytes).graph!;
  const inits = new Set((g.initializer ?? []).map((t) => t.name));
  return (g.input ?? []).find((v) => !inits.has(v.name))!.name!;
}
