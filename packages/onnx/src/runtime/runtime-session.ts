// Forward passes of an ONNX model in an ONNX runtime, with QTK tensors in and out. The runtime is a value the caller
// passes (onnxruntime-node's or onnxruntime-web's module: their InferenceSession / Tensor API is the same), so this
// entry stays platform-neutral and loads no runtime itself.
import { Tensor } from '@qtk/tensor';
import { OnnxError } from '../errors.js';

/** The part of onnxruntime's API QTK uses; onnxruntime-node and onnxruntime-web both have it. */
/** Session options QTK passes through to the runtime. */
export interface RuntimeSessionOptions {
  /**
   * How far the runtime rewrites the graph; its default is 'all'. onnxruntime-web 1.30 cannot hand back an
   * intermediate value that its 'all' level's layout rewrite touched ("Reading data from non-tensor typed value"),
   * so calibration there asks for 'extended'.
   */
  readonly graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
}

export interface OnnxRuntimeApi {
  readonly InferenceSession: {
    create(
      model: Uint8Array,
      options?: RuntimeSessionOptions & { logSeverityLevel?: 0 | 1 | 2 | 3 | 4 },
    ): Promise<RuntimeSession>;
  };
  readonly Tensor: new (
    type: 'float32' | 'int32' | 'bool',
    data: ArrayLike<number>,
    dims: readonly number[],
  ) => unknown;
}

type RuntimeOutputs = Record<string, { readonly data: unknown; readonly dims: readonly number[] }>;

/** An onnxruntime inference session, as QTK uses it. */
export interface RuntimeSession {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, unknown>): Promise<RuntimeOutputs>;
  run(feeds: Record<string, unknown>, fetches: readonly string[]): Promise<RuntimeOutputs>;
  release?(): Promise<void>;
}

/** The runtime could not load a model, or failed to run a batch: the message says which and why. */
export class RuntimeRunError extends OnnxError {
  static override readonly code: string = 'E_ONNX_RUNTIME';
}

/** A model loaded in an ONNX runtime: runs batches of QTK tensors, returns float32 tensors by value name. */
export class RuntimeModel {
  private constructor(
    private readonly ort: OnnxRuntimeApi,
    private readonly session: RuntimeSession,
  ) {}

  /** Loads ONNX bytes; RuntimeRunError when the runtime refuses them. */
  static async create(
    ort: OnnxRuntimeApi,
    bytes: Uint8Array,
    options: RuntimeSessionOptions = {},
  ): Promise<RuntimeModel> {
    try {
      // errors only: onnxruntime's warnings (unused initializers, ...) are not the user's to act on
      return new RuntimeModel(ort, await ort.InferenceSession.create(bytes, { ...options, logSeverityLevel: 3 }));
    } catch (e) {
      throw new RuntimeRunError(`onnxruntime cannot load the model: ${(e as Error).message}`, { cause: e });
    }
  }

  get inputNames(): readonly string[] {
    return this.session.inputNames;
  }

  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  /**
   * Runs one batch (a tensor per graph input, in order); every graph output, or only those named in `fetches` (the
   * runtime then computes only what they need), by name, as float32 tensors.
   */
  async run(xs: readonly Tensor[], fetches?: readonly string[]): Promise<Map<string, Tensor>> {
    const names = this.session.inputNames;
    if (xs.length !== names.length)
      throw new RuntimeRunError(`the model takes ${names.length} input(s) (${names.join(', ')}), given ${xs.length}`);
    const feeds: Record<string, unknown> = {};
    xs.forEach((x, i) => {
      feeds[names[i]!] = this.tensorOf(x);
    });
    let results: RuntimeOutputs;
    try {
      results = await (fetches ? this.session.run(feeds, fetches) : this.session.run(feeds));
    } catch (e) {
      throw new RuntimeRunError(`onnxruntime failed to run a batch: ${(e as Error).message}`, { cause: e });
    }
    const out = new Map<string, Tensor>();
    for (const [name, t] of Object.entries(results)) {
      if (!(t.data instanceof Float32Array))
        throw new RuntimeRunError(
          `onnxruntime gave output '${name}' as ${Object.prototype.toString.call(t.data)}, not float32`,
        );
      out.set(name, new Tensor({ data: t.data, shape: [...t.dims], dtype: 'float32' }));
    }
    return out;
  }

  /** The graph outputs of one batch, in the graph's order. */
  async outputs(xs: readonly Tensor[]): Promise<Tensor[]> {
    const byName = await this.run(xs);
    return this.session.outputNames.map((n) => byName.get(n)!);
  }

  async release(): Promise<void> {
    await this.session.release?.();
  }

  private tensorOf(x: Tensor): unknown {
    if (x.dtype === 'float32' || x.dtype === 'int32') return new this.ort.Tensor(x.dtype, x.values(), x.shape);
    if (x.dtype === 'bool') return new this.ort.Tensor('bool', Uint8Array.from(x.values()), x.shape);
    throw new RuntimeRunError(
      `a ${x.dtype} input has no onnxruntime form; give the model float32, int32 or bool inputs`,
    );
  }
}
