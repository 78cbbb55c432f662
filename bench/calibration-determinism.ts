// Calibration is deterministic: the reference network calibrated with the kl observer again and again
// on two wasm threads, while two busy loops load the machine, gives bit-identical scales to a
// one-thread run every time. Exits 1 on any difference.
// Run: node --conditions=qtk-source --import tsx bench/calibration-determinism.ts [runs] [observer]
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { namedFakeQuants } from '@qtk/fake-quant';
import { loadDataset, SUBSET_DIR } from '@qtk/examples';
import { loadWasmBackend, setWasmThreads } from '@qtk/tensor';
import { calibrateWith, calibrationBatches, loadReferenceNet, type CalibObserver } from './calibration.js';

loadWasmBackend();
const runs = Number(process.argv[2] ?? 20);
const observer = (process.argv[3] ?? 'kl') as CalibObserver;
const float = loadReferenceNet(join(import.meta.dirname, '..', 'apps', 'demo', 'assets', 'reference-net.qtk'));
const batches = calibrationBatches(loadDataset(SUBSET_DIR, 'train', 512), 512);

async function scales(): Promise<Map<string, string>> {
  const { model } = await calibrateWith(float, observer, batches, 'qtk');
  return new Map(namedFakeQuants(model).map(([name, fq]) => [name, Array.from(fq.calculateQparams().scale).join(',')]));
}

setWasmThreads(false);
const reference = await scales();
setWasmThreads(true);
const burners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
let differing = 0;
try {
  for (let r = 0; r < runs; r++) {
    const got = await scales();
    const layers = [...reference].filter(([name, s]) => got.get(name) !== s).map(([name]) => name);
    if (layers.length) {
      differing++;
      console.log(`run ${r}: ${layers.length} fake-quant(s) differ: ${layers.slice(0, 6).join(', ')}`);
    }
  }
} finally {
  for (const b of burners) b.kill();
}
console.log(
  `${observer} calibration, ${runs} two-thread runs under load: ${differing} differ from the one-thread run (${reference.size} fake-quants compared)`,
);
process.exit(differing ? 1 : 0);
