// A fixed-point model's forward passes on the faster of its two bit-exact engines: QTK's wasm integer kernels, or
// its integer ONNX (the export qtk export writes) in onnxruntime-node. Which is faster depends on the machine
// (docs/engines.md), so it is measured, and the runtime is trusted only where it is proven: the first two batches
// run on both, every output must be identical element for element (integers, and the float outputs of a
// heterogeneous model's CPU tail), and the second batch's times choose the engine for the rest. A difference, or an
// export or runtime that fails, keeps QTK and says why.
import '@qtk/onnx-deploy';
import { QTensor } from '@qtk/fixed-point';
import type { GraphModule } from '@qtk/ir';
import { exportOnnxBytes } from '@qtk/onnx';
import { noGrad, Tensor } from '@qtk/tensor';
import { firstRows } from './batches.js';
import { onnxFileOf } from './onnx-file.js';
import { OrtModel, type RuntimeOutput } from './ort-session.js';

/** An output as QTK gives it: a QTensor (integers and their scale) or a float tensor. */
type Output = QTensor | Tensor;

/** Batches run on both engines before the choice: the first warms both up, the second is timed. */
const PROVEN_BATCHES = 2;

function asList(y: unknown): Output[] {
  return (Array.isArray(y) ? y : [y]) as Output[];
}

/** The first element where the runtime's output differs from QTK's, or null when every one is identical. */
export function firstDifference(
  qtk: readonly Output[],
  runtime: readonly { data: ArrayLike<number>; dims: readonly number[] }[],
): string | null {
  if (qtk.length !== runtime.length) return `${runtime.length} outputs against QTK's ${qtk.length}`;
  for (const [i, y] of qtk.entries()) {
    const r = runtime[i]!;
    if (y.shape.join() !== r.dims.join()) return `output ${i} has the shape [${r.dims}] against QTK's [${y.shape}]`;
    const mine = y instanceof QTensor ? y.ints() : y.values();
    for (let j = 0; j < mine.length; j++)
      if (!Object.is(mine[j], r.data[j]) && !(Number.isNaN(mine[j]!) && Number.isNaN(r.data[j]!)))
        return `output ${i}, element ${j}: ${r.data[j]} against QTK's ${mine[j]}`;
  }
  return null;
}

export class FixedModelEngines {
  private session: OrtModel | null = null;
  private version = '?';
  private batches = 0;
  private choice: 'qtk' | 'ort' | null = null;
  private speedup = 0;
  /** Why QTK runs the model alone (the runtime failed or differed), or null. */
  why: string | null = null;

  /** `force`: run in onnxruntime-node after the proof whatever the times say (--engine ort). */
  constructor(
    private readonly model: GraphModule,
    private readonly force = false,
  ) {}

  /** Where the batches ran, and on what evidence. */
  get engine(): string {
    if (this.why !== null || this.batches === 0) return 'qtk';
    const version = `onnxruntime-node ${this.version}`;
    if (this.choice === null)
      return `qtk (its integer ONNX in ${version} gave identical outputs on the ${this.batches} batch there was, too few to time)`;
    const proof = `identical outputs on the first ${PROVEN_BATCHES} batches`;
    const times = `${this.speedup.toFixed(2)}× QTK's speed there`;
    return this.choice === 'ort'
      ? `${version}, the model's integer ONNX (${proof}, ${times})`
      : `qtk (its integer ONNX in ${version}: ${proof}, ${times})`;
  }

  /** One batch's outputs, as QTK gives them. */
  async run(xs: readonly Tensor[]): Promise<Output[]> {
    if (this.why !== null || this.choice === 'qtk') return this.qtk(xs).outputs;
    try {
      if (this.choice === 'ort') return this.fromRuntime(await this.runtime(xs).then((r) => r.outputs), this.last!);
      if (!this.session) await this.start(xs);
      const q = this.qtk(xs);
      const r = await this.runtime(xs);
      const diff = firstDifference(q.outputs, r.outputs);
      if (diff)
        throw new Error(`its integer ONNX in onnxruntime-node differs from QTK on batch ${this.batches + 1} (${diff})`);
      this.last = q.outputs;
      if (++this.batches === PROVEN_BATCHES) {
        this.speedup = q.seconds / r.seconds;
        this.choice = this.force || this.speedup > 1 ? 'ort' : 'qtk';
        if (this.choice === 'qtk') await this.release();
      }
      return q.outputs;
    } catch (e) {
      this.why = (e as Error).message.split('\n')[0]!;
      await this.release();
      return this.qtk(xs).outputs;
    }
  }

  async release(): Promise<void> {
    await this.session?.release();
    this.session = null;
  }

  /** The scales and dtypes of QTK's outputs, which the runtime's integers are read with. */
  private last: Output[] | null = null;

  private qtk(xs: readonly Tensor[]): { outputs: Output[]; seconds: number } {
    const t0 = performance.now();
    const outputs = asList(noGrad(() => this.model.call(...xs)));
    return { outputs, seconds: (performance.now() - t0) / 1000 };
  }

  private async start(xs: readonly Tensor[]): Promise<void> {
    let bytes: Uint8Array;
    try {
      bytes = exportOnnxBytes(this.model, firstRows(xs, 2));
    } catch (e) {
      throw new Error(`its integer ONNX cannot be exported: ${(e as Error).message}`);
    }
    this.session = await OrtModel.create(onnxFileOf(bytes, 'its integer ONNX export'));
    this.version = this.session.version;
  }

  private async runtime(xs: readonly Tensor[]): Promise<{ outputs: RuntimeOutput[]; seconds: number }> {
    const t0 = performance.now();
    const outputs = await this.session!.run(xs);
    return { outputs, seconds: (performance.now() - t0) / 1000 };
  }

  /** The runtime's outputs in QTK's form: integers with the scale and dtype QTK's outputs have. */
  private fromRuntime(
    outputs: { data: ArrayLike<number>; dims: readonly number[] }[],
    like: readonly Output[],
  ): Output[] {
    return outputs.map((r, i) => {
      const y = like[i]!;
      if (y instanceof QTensor) return QTensor.fromInts(r.data, r.dims, y.scale, y.dtype, y.axis);
      return new Tensor({ data: Float32Array.from(r.data), shape: [...r.dims], dtype: 'float32' });
    });
  }
}
