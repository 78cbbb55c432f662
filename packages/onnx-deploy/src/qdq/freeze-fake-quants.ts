// The export walk runs the model once on the example inputs. A fake-quant in the QAT state would
// observe them and move its scale (and one in CALIBRATION would feed its observer), so the exported
// scales would depend on the example and the model would change by being exported. Before the walk,
// QAT fake-quants compute as in VALIDATION (scale frozen); afterwards every fake-quant gets its
// state, scale and observer statistics back.
import { QatModule } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import type { GraphModule } from '@qtk/ir';
import type { ObserverState } from '@qtk/spec';
import { OnnxExportError } from '@qtk/onnx';

interface Saved {
  fq: FakeQuantize;
  state: FakeQuantize['fakeQuantState'];
  scale: Float32Array;
  initialized: number;
  observer: ObserverState;
}

function restore(s: Saved): void {
  s.fq.setFakeQuantState(s.state);
  s.fq.scale.data.set(s.scale, s.fq.scale.offset);
  s.fq.initialized.data[s.fq.initialized.offset] = s.initialized;
  s.fq.observer.load(s.observer);
}

/**
 * Freezes the fake-quants of `gm` for the export walk (see above); returns what restores them.
 * An activation fake-quant that quantizes but never saw data has no scale to export: that is an
 * OnnxExportError naming it (weight fake-quants take their scale from the weight, as the model does).
 */
export function freezeFakeQuantsForExport(gm: GraphModule): () => void {
  const weightFakeQuants = new Set<FakeQuantize>();
  for (const m of gm.modules())
    if (m instanceof QatModule && m.weightFakeQuant) weightFakeQuants.add(m.weightFakeQuant);
  const named = gm.namedModules().filter((e): e is [string, FakeQuantize] => e[1] instanceof FakeQuantize);
  const uncalibrated = named
    .filter(([, fq]) => !weightFakeQuants.has(fq) && fq.fakeQuantState !== 'CALIBRATION' && !fq.isInitialized)
    .map(([name]) => name);
  if (uncalibrated.length > 0)
    throw new OnnxExportError(
      `exportOnnx: ${uncalibrated.length} activation fake-quant(s) have no scale yet (${uncalibrated.join(', ')}); ` +
        'calibrate the model (calibrate(model, batches)) or train it before exporting',
    );
  const saved: Saved[] = named.map(([, fq]) => ({
    fq,
    state: fq.fakeQuantState,
    scale: Float32Array.from(fq.scale.values()),
    initialized: fq.initialized.values()[0]!,
    observer: fq.observer.state(),
  }));
  for (const { fq } of saved) if (fq.fakeQuantState === 'QAT') fq.setFakeQuantState('VALIDATION');
  return () => {
    for (const s of saved) restore(s);
  };
}
