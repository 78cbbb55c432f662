// Running an ONNX file in onnxruntime-node, batch by batch (its sessions run asynchronously).
import type { Tensor } from '@qtk/tensor';
import { CliError } from './io.js';
import type { OnnxFile } from './onnx-file.js';
import { floatInputs } from './sample-inputs.js';

type Ort = typeof import('onnxruntime-node');
type Session = Awaited<ReturnType<Ort['InferenceSession']['create']>>;

/** One output of a run: its values (numbers; int64 / uint64 outputs as numbers too) and shape. */
export interface RuntimeOutput {
  readonly data: ArrayLike<number>;
  readonly dims: readonly number[];
  readonly type: string;
}

/** onnxruntime-node's module; a CliError saying what to do when it cannot be loaded. */
export async function loadOrt(): Promise<Ort> {
  try {
    return await import('onnxruntime-node');
  } catch (e) {
    throw new CliError(
      `onnxruntime-node cannot be loaded (${(e as Error).message}); reinstall @qtk/cli with its dependencies, or pass --engine qtk for a float ONNX file`,
      { cause: e },
    );
  }
}

function numbers(data: unknown): ArrayLike<number> {
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) return Array.from(data, Number);
  return data as ArrayLike<number>;
}

/** An onnxruntime-node session of one ONNX file taking float32 inputs (one or several). */
export class OrtModel {
  private constructor(
    private readonly ort: Ort,
    private readonly session: Session,
    /** The graph inputs, in order: run's tensors feed them. */
    readonly inputNames: readonly string[],
    /** The declared batch size (of the first input that fixes one), or null when dim 0 is free. */
    readonly fixedBatch: number | null,
    readonly version: string,
  ) {}

  static async create(file: OnnxFile): Promise<OrtModel> {
    const inputs = floatInputs(file);
    const ort = await loadOrt();
    let session: Session;
    try {
      session = await ort.InferenceSession.create(file.bytes);
    } catch (e) {
      throw new CliError(`onnxruntime-node cannot load ${file.path}: ${(e as Error).message}`, { cause: e });
    }
    const fixedBatch = inputs.map((i) => i.shape?.[0] ?? null).find((b) => b !== null) ?? null;
    return new OrtModel(
      ort,
      session,
      inputs.map((i) => i.name),
      fixedBatch,
      ort.env.versions.node ?? '?',
    );
  }

  /** The session's output names, in the graph's order. */
  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  /**
   * Runs one batch (one [k, ...] tensor per input, in the graph's input order); returns every graph output. A
   * file declaring a fixed batch size B runs the samples B at a time (the last group padded with zeros, whose
   * results are dropped).
   */
  async run(xs: Tensor | readonly Tensor[]): Promise<RuntimeOutput[]> {
    const inputs = Array.isArray(xs) ? (xs as readonly Tensor[]) : [xs as Tensor];
    if (inputs.length !== this.inputNames.length)
      throw new CliError(
        `the ONNX file takes ${this.inputNames.length} input(s) (${this.inputNames.join(', ')}), given ${inputs.length}`,
      );
    const k = inputs[0]!.shape[0]!;
    const B = this.fixedBatch;
    if (B === null || B === k)
      return this.runExactly(inputs.map((x) => ({ data: x.values() as Float32Array, shape: [...x.shape] })));
    const parts: RuntimeOutput[][] = [];
    for (let i = 0; i < k; i += B) {
      const chunks = inputs.map((x) => {
        const per = x.size / k;
        const chunk = new Float32Array(B * per);
        chunk.set((x.values() as Float32Array).subarray(i * per, Math.min(k, i + B) * per));
        return { data: chunk, shape: [B, ...x.shape.slice(1)] };
      });
      parts.push(await this.runExactly(chunks));
    }
    return parts[0]!.map((first, o) => {
      const rowSize = first.data.length / B;
      const data = new Float64Array(k * rowSize);
      parts.forEach((p, j) => {
        const rows = Math.min(B, k - j * B);
        data.set(Array.from(p[o]!.data).slice(0, rows * rowSize), j * B * rowSize);
      });
      return { data, dims: [k, ...first.dims.slice(1)], type: first.type };
    });
  }

  private async runExactly(inputs: readonly { data: Float32Array; shape: number[] }[]): Promise<RuntimeOutput[]> {
    const feeds = Object.fromEntries(
      inputs.map((x, i) => [this.inputNames[i]!, new this.ort.Tensor('float32', x.data, x.shape)]),
    );
    let results: Awaited<ReturnType<Session['run']>>;
    try {
      results = await this.session.run(feeds);
    } catch (e) {
      throw new CliError(`onnxruntime-node failed to run the model: ${(e as Error).message}`, { cause: e });
    }
    return this.session.outputNames.map((name) => {
      const t = results[name]!;
      return { data: numbers(t.data), dims: t.dims, type: t.type };
    });
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
