// Conversion of modules called inside fxWrap-ed methods. Their inputs are not graph values, so their
// input qparams are only known when the wrapped code runs: each such module is converted on its first
// call from the quantized tensors it receives (and again for other input qparams), with the march's
// own rules, and the result is cached.
import { FakeQuantize } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { Graph, mapArg, type Argument, type Node } from '@qtk/ir';
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import {
  resolveQuantRange,
  UnsupportedOpError,
  type ConvertedNode,
  type MarchBackendV1,
  type QParams,
} from '@qtk/spec';
import { InvalidArgumentError, opOfModule, Tensor, type RoundingMode } from '@qtk/tensor';
import { convertNodeContext } from './node-context.js';
import { uncalibratedFakeQuants } from './calibration.js';
import { QatModule } from './qat-module.js';

export interface LateConversionEnv {
  readonly march: MarchBackendV1;
  readonly rounding: RoundingMode;
  warn(message: string): void;
  /** Wraps the march's UnsupportedOpError (convertFx's ConversionError). */
  fail(error: UnsupportedOpError): Error;
  /** Names fake-quants that never saw data (convertFx's ConversionError). */
  failUncalibrated(fakeQuants: readonly string[]): Error;
}

function qparamsOfTensor(q: QTensor): QParams {
  const { quantMin, quantMax } = resolveQuantRange(q.dtype as QParams['dtype'], null, null);
  return { scale: q.scale, zeroPoint: 0, dtype: q.dtype as QParams['dtype'], quantMin, quantMax, chAxis: q.axis };
}

/** The quantized tensors among the arguments (inside lists too: cat's), in order. */
function quantizedIn(args: readonly unknown[]): QTensor[] {
  return args.flatMap((a) => (a instanceof QTensor ? [a] : Array.isArray(a) ? quantizedIn(a) : []));
}

const keyOf = (args: readonly unknown[]): string =>
  args
    .map((a) =>
      a instanceof QTensor
        ? `${a.dtype}/${a.axis}/${Array.from(a.scale).join(',')}`
        : Array.isArray(a)
          ? `[${keyOf(a)}]`
          : typeof a === 'number' || typeof a === 'boolean'
            ? String(a)
            : 'float',
    )
    .join('|');

/** A converted call: the march's module and its arguments, with `input_<i>` standing for the call's i-th value. */
interface BuiltCall {
  readonly module: Module;
  readonly args: readonly unknown[] | null;
  readonly inputs: readonly Node[];
}

/**
 * Stands in for a module of the QAT model where no graph says what reaches it (inside an fxWrap-ed
 * method, or anywhere in an eager-mode model): called with quantized tensors (or as a QuantStub) it
 * runs the march's fixed-point module for it, built on the first call with these input qparams;
 * called with float tensors only, it runs the float copy. With `method`, it stands for that method
 * of the module (a FloatFunctional's `add`), whose output scale is `outputFakeQuant`'s.
 */
export class LateConvertedModule extends Module {
  static override readonly takesQuantizedValues = true;

  private readonly built = new Map<string, BuiltCall>();

  constructor(
    /** The QAT model's module (a copy in VALIDATION state). */
    readonly source: Module,
    /** Its path in the model, for messages. */
    readonly path: string,
    private readonly env: LateConversionEnv,
    private readonly call_: { readonly method?: string; readonly outputFakeQuant?: FakeQuantize | null } = {},
  ) {
    super();
    this.training = false;
  }

  private get inner(): Module {
    return this.source instanceof QatModule ? this.source.module : this.source;
  }

  forward(...args: unknown[]): unknown {
    const quantized = quantizedIn(args).length > 0;
    if (!quantized && !(this.inner instanceof QuantStub)) {
      if (this.source instanceof QatModule && !(this.inner instanceof DeQuantStub)) {
        throw new InvalidArgumentError(
          `'${this.path}' (${this.inner.constructor.name}) is a quantized module of the converted model called with float inputs only; ` +
            'quantize its input first (a QuantStub before it) or give it qconfig null to keep it float',
        );
      }
      const { method } = this.call_;
      const target = this.source as unknown as Record<string, (...a: unknown[]) => unknown>;
      return method !== undefined ? target[method]!.apply(this.source, args) : target.call!.apply(this.source, args);
    }
    const key = keyOf(args);
    let built = this.built.get(key);
    if (!built) {
      built = this.build(args);
      this.built.set(key, built);
    }
    const values = new Map<Node, unknown>();
    for (const [i, v] of flatValues(args).entries()) values.set(built.inputs[i]!, v);
    const callArgs = built.args
      ? (built.args.map((a) => mapArg(a as Argument, (n) => values.get(n) as Argument)) as unknown[])
      : args;
    return (built.module as unknown as { call(...a: unknown[]): unknown }).call(...callArgs);
  }

  /** The march's fixed-point module for a call with these arguments, from a one-node graph. */
  private build(args: readonly unknown[]): BuiltCall {
    const { march } = this.env;
    const uncalibrated = uncalibratedFakeQuants(this.source).map((p) => (p === '' ? this.path : `${this.path}.${p}`));
    if (uncalibrated.length) throw this.env.failUncalibrated(uncalibrated);
    const graph = new Graph();
    const inputs: Node[] = [];
    const qparams = new Map<Node, QParams | null>();
    /** Tensors become placeholders (in order, lists entered), other values stay as they are. */
    const toArg = (a: unknown): Argument => {
      if (Array.isArray(a)) return a.map(toArg);
      if (!(a instanceof QTensor) && !(a instanceof Tensor)) return a as Argument;
      const p = graph.placeholder(`input_${inputs.length}`);
      inputs.push(p);
      qparams.set(p, a instanceof QTensor ? qparamsOfTensor(a) : null);
      return p;
    };
    const argNodes = args.map(toArg);
    const { method, outputFakeQuant } = this.call_;
    const node = graph.callModule(this.path, argNodes, {}, method !== undefined ? { method } : {});
    const ctx = convertNodeContext({
      march: march.id,
      node,
      inner: this.inner,
      qat: this.source instanceof QatModule ? this.source : null,
      outputFakeQuant: outputFakeQuant ?? (this.source instanceof FakeQuantize ? this.source : null),
      catalogOp: opOfModule(this.inner, method),
      qparamsOf: (n: Node) => qparams.get(n) ?? null,
      rounding: this.env.rounding,
      warn: (m) => this.env.warn(`${this.path}: ${m}`),
    });
    let converted: ConvertedNode | undefined;
    try {
      converted = march.hooks.convertNode?.call(march.hooks, ctx);
    } catch (e) {
      if (UnsupportedOpError.isInstance(e)) throw this.env.fail(e);
      throw e;
    }
    if (!converted) {
      throw this.env.fail(
        new UnsupportedOpError({
          op: method !== undefined ? `${this.inner.constructor.name}.${method}` : this.inner.constructor.name,
          node: this.path,
          march: march.id,
          reason: 'the march has no conversion rule for it',
        }),
      );
    }
    return { module: converted.module, args: converted.args ?? argNodes, inputs };
  }

  override extraRepr(): string {
    const what =
      this.call_.method !== undefined
        ? `${this.inner.constructor.name}.${this.call_.method}`
        : this.inner.constructor.name;
    return `${this.path}: ${what}, converted on first call (${this.built.size} form(s) built)`;
  }
}

/** The tensors among the arguments (lists entered), in order: the values of a built call's inputs. */
function flatValues(args: readonly unknown[]): unknown[] {
  return args.flatMap((a) =>
    Array.isArray(a) ? flatValues(a) : a instanceof QTensor || a instanceof Tensor ? [a] : [],
  );
}
