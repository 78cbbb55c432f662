// Conversion of modules called inside fxWrap-ed methods. Their inputs are not graph values, so their
// input qparams are only known when the wrapped code runs: each such module is converted on its first
// call from the quantized tensors it receives (and again for other input qparams), with the march's
// own rules, and the result is cached.
import { FakeQuantize } from '@qtk/fake-quant';
import { QTensor } from '@qtk/fixed-point';
import { Graph, type Node } from '@qtk/ir';
import { DeQuantStub, Module, QuantStub } from '@qtk/nn';
import {
  resolveQuantRange,
  UnsupportedOpError,
  type ConvertedNode,
  type MarchBackendV1,
  type QParams,
} from '@qtk/spec';
import { InvalidArgumentError, opOfModule, type RoundingMode } from '@qtk/tensor';
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

const keyOf = (args: readonly unknown[]) =>
  args.map((a) => (a instanceof QTensor ? `${a.dtype}/${a.axis}/${Array.from(a.scale).join(',')}` : 'float')).join('|');

/**
 * Stands in for a module of the QAT model inside an fxWrap-ed method of the converted model: called
 * with quantized tensors (or as a QuantStub) it runs the march's fixed-point module for it, built on
 * the first call with these input qparams; called with float tensors only, it runs the float copy.
 */
export class LateConvertedModule extends Module {
  static override readonly takesQuantizedValues = true;

  private readonly built = new Map<string, Module>();

  constructor(
    /** The QAT model's module (a copy in VALIDATION state). */
    readonly source: Module,
    /** Its path in the model, for messages. */
    readonly path: string,
    private readonly env: LateConversionEnv,
  ) {
    super();
    this.training = false;
  }

  private get inner(): Module {
    return this.source instanceof QatModule ? this.source.module : this.source;
  }

  forward(...args: unknown[]): unknown {
    const quantized = args.some((a) => a instanceof QTensor);
    if (!quantized && !(this.inner instanceof QuantStub)) {
      if (this.source instanceof QatModule && !(this.inner instanceof DeQuantStub)) {
        throw new InvalidArgumentError(
          `'${this.path}' (${this.inner.constructor.name}) is called inside an fxWrap-ed method of the converted model with float inputs only; ` +
            'quantize its input first (a QuantStub before it) or give it qconfig null to keep it float',
        );
      }
      return (this.source as unknown as { call(...a: unknown[]): unknown }).call(...args);
    }
    const key = keyOf(args);
    let m = this.built.get(key);
    if (!m) {
      m = this.build(args);
      this.built.set(key, m);
    }
    return (m as unknown as { call(...a: unknown[]): unknown }).call(...args);
  }

  /** The march's fixed-point module for a call with these arguments, from a one-node graph. */
  private build(args: readonly unknown[]): Module {
    const { march } = this.env;
    const uncalibrated = uncalibratedFakeQuants(this.source).map((p) => (p === '' ? this.path : `${this.path}.${p}`));
    if (uncalibrated.length) throw this.env.failUncalibrated(uncalibrated);
    const graph = new Graph();
    const inputs = new Map<Node, QParams | null>();
    const argNodes = args.map((a, i) => {
      const p = graph.placeholder(`input_${i}`);
      inputs.set(p, a instanceof QTensor ? qparamsOfTensor(a) : null);
      return p;
    });
    const node = graph.callModule(this.path, argNodes);
    const ctx = convertNodeContext({
      march: march.id,
      node,
      inner: this.inner,
      qat: this.source instanceof QatModule ? this.source : null,
      outputFakeQuant: this.source instanceof FakeQuantize ? this.source : null,
      catalogOp: opOfModule(this.inner),
      qparamsOf: (n: Node) => inputs.get(n) ?? null,
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
          op: this.inner.constructor.name,
          node: this.path,
          march: march.id,
          reason: 'the march has no conversion rule for it',
        }),
      );
    }
    return converted.module;
  }

  override extraRepr(): string {
    return `${this.path}: ${this.inner.constructor.name}, converted on first call (${this.built.size} form(s) built)`;
  }
}
