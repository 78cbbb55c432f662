// A float QTK model file (a trained float model saved with saveModelFile) run in onnxruntime-node: exported to
// ONNX once, on the first batch's first rows, and checked there against QTK's own forward before any batch counts;
// QTK's kernels when the export, the runtime or the check fails, with a note saying why.
import type { GraphModule } from '@qtk/ir';
import { exportOnnxBytes, RuntimeModel, runtimeDifference } from '@qtk/onnx';
import { noGrad, type Tensor } from '@qtk/tensor';
import { firstRows } from './batches.js';
import { loadOrt } from './ort-session.js';

/** Rows the export and the check run on: two, so a batch dim of 1 elsewhere in the model is not taken for it. */
const CHECK_ROWS = 2;
/** How far the runtime's outputs may be from QTK's, relative to the larger of 1 and the largest |output|. */
const TOLERANCE = 1e-4;

/** Why the runtime's outputs on the example are not QTK's, or null. */
function outputDifference(qtk: readonly Tensor[], runtime: readonly Tensor[]): string | null {
  if (qtk.length !== runtime.length) return `${runtime.length} outputs instead of ${qtk.length}`;
  for (const [i, t] of qtk.entries()) {
    const why = runtimeDifference(t, runtime[i]!, TOLERANCE);
    if (why) return `output ${i}: ${why}`;
  }
  return null;
}

/** The model's outputs as a list of float32 tensors. */
function qtkOutputs(model: GraphModule, xs: readonly Tensor[]): Tensor[] {
  const y = noGrad(() => model.call(...xs));
  return (Array.isArray(y) ? y : [y]) as Tensor[];
}

/**
 * The forward passes of a float model in onnxruntime-node: `start` exports and checks it on the first batch; then
 * `run` gives each batch's outputs, or null once the model runs in QTK (`why` says why).
 */
export class FloatModelOnRuntime {
  private runtime: RuntimeModel | null = null;
  private version = '';
  why: string | null = null;

  constructor(private readonly model: GraphModule) {}

  /** 'onnxruntime-node <version>' while the model runs there, else 'qtk'. */
  get engine(): string {
    return this.runtime ? `onnxruntime-node ${this.version}` : 'qtk';
  }

  async run(xs: readonly Tensor[]): Promise<Tensor[] | null> {
    if (this.why !== null) return null;
    try {
      if (!this.runtime) await this.start(xs);
      const rows = xs[0]?.shape[0];
      const outs = await this.runtime!.outputs(xs);
      const wrong = outs.find((t) => t.shape[0] !== rows);
      if (wrong) throw new Error(`onnxruntime gave an output of shape [${wrong.shape}] on a batch of ${rows}`);
      return outs;
    } catch (e) {
      this.why = (e as Error).message.split('\n')[0]!;
      await this.runtime?.release();
      this.runtime = null;
      return null;
    }
  }

  async release(): Promise<void> {
    await this.runtime?.release();
    this.runtime = null;
  }

  private async start(xs: readonly Tensor[]): Promise<void> {
    const example = firstRows(xs, CHECK_ROWS);
    let bytes: Uint8Array;
    try {
      bytes = exportOnnxBytes(this.model, example);
    } catch (e) {
      throw new Error(`the model cannot be exported to ONNX: ${(e as Error).message}`);
    }
    const ort = await loadOrt();
    this.version = ort.env.versions.node ?? '?';
    this.runtime = await RuntimeModel.create(ort, bytes);
    const why = outputDifference(qtkOutputs(this.model, example), await this.runtime.outputs(example));
    if (why) throw new Error(`onnxruntime's outputs differ from QTK's on the first samples (${why})`);
  }
}
