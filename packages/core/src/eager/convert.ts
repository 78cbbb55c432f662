// Eager-mode convert (horizon_plugin_pytorch's and PyTorch's convert): every quantized module of a
// prepareQat model is replaced by a stand-in that builds the march's fixed-point module on its first
// call from the quantized tensors it receives (LateConvertedModule, as convertFx does inside
// fxWrap-ed methods), so no graph is needed. CPU modules of a heterogeneous model dequantize their
// inputs, run in float and quantize their output with its observed scale.
import { FakeQuantize, getDefaultRounding, namedFakeQuants, setFakeQuantize } from '@qtk/fake-quant';
import { Dequantize, QTensor, Quantize } from '@qtk/fixed-point';
import { DeQuantStub, deepCopy, FloatFunctional, Identity, Module } from '@qtk/nn';
import { marches, QConfigError, type MarchBackendV1, type QParams } from '@qtk/spec';
import { InvalidArgumentError, opOfModule, type RoundingMode, type Tensor } from '@qtk/tensor';
import { uncalibratedFakeQuants } from '../calibration.js';
import { ConversionError, lateConversionEnv } from '../convert-fx.js';
import { getMarch } from '../march.js';
import { QatModule } from '../qat-module.js';
import { LateConvertedModule, type LateConversionEnv } from '../wrapped-conversion.js';
import { CpuModule } from './cpu-module.js';
import { eagerPreparation } from './prepare-qat.js';
import { defineFloatFunctionalMethods, QatFloatFunctional } from './qat-float-functional.js';

export interface ConvertOptions {
  /** The march (registered id or backend); default: the one the model was prepared for, else setMarch's. */
  march?: string | MarchBackendV1;
  /** Receives conversion warnings (default: console.warn). */
  onWarning?: (message: string) => void;
  /** Rounding of real numbers; default: the fake-quant default. */
  rounding?: RoundingMode;
}

type Callable = (...args: unknown[]) => unknown;

/** A FloatFunctional of the converted model: each method converted on its first call (a LateConvertedModule per method). */
export class LateConvertedFunctional extends Module {
  static override readonly takesQuantizedValues = true;
  private readonly perMethod = new Map<string, LateConvertedModule>();

  constructor(
    readonly functional: FloatFunctional,
    readonly outputFakeQuant: FakeQuantize | null,
    readonly path: string,
    private readonly env: LateConversionEnv,
  ) {
    super();
    this.training = false;
  }

  forward(): never {
    throw new InvalidArgumentError(
      `'${this.path}' (FloatFunctional) is not meant to be called; use its methods (add, mul, cat, ...)`,
    );
  }

  runMethod(method: string, args: readonly unknown[]): unknown {
    let late = this.perMethod.get(method);
    if (!late) {
      const fq = opOfModule(this.functional, method)?.ownOutputScale ? this.outputFakeQuant : null;
      late = new LateConvertedModule(this.functional, this.path, this.env, { method, outputFakeQuant: fq });
      this.perMethod.set(method, late);
    }
    return (late as unknown as { call: Callable }).call(...args);
  }
}

/** A CPU module of a heterogeneous model: quantized inputs dequantized, the float module, its output quantized again. */
export class CpuConvertedModule extends Module {
  static override readonly takesQuantizedValues = true;

  constructor(
    readonly module: Module,
    /** The output's qparams (its observed scale); null keeps the output float. */
    readonly outputQparams: QParams | null,
    readonly dequantize: Module,
    readonly quantize: Module | null,
    readonly path: string,
  ) {
    super();
    this.training = false;
  }

  forward(...args: unknown[]): unknown {
    return this.requantized((this.module as unknown as { call: Callable }).call(...this.floatArgs(args)));
  }

  runMethod(method: string, args: readonly unknown[]): unknown {
    const f = (this.module as unknown as Record<string, Callable>)[method]!;
    return this.requantized(f.apply(this.module, this.floatArgs(args)));
  }

  private floatArgs(args: readonly unknown[]): unknown[] {
    const toFloat = (a: unknown): unknown =>
      a instanceof QTensor
        ? (this.dequantize as unknown as { call: Callable }).call(a)
        : Array.isArray(a)
          ? a.map(toFloat)
          : a;
    return args.map(toFloat);
  }

  private requantized(y: unknown): unknown {
    return this.quantize ? (this.quantize as unknown as { call(t: Tensor): unknown }).call(y as Tensor) : y;
  }
}

defineFloatFunctionalMethods(LateConvertedFunctional);
defineFloatFunctionalMethods(CpuConvertedModule);

function marchFor(model: Module, option: ConvertOptions['march']): MarchBackendV1 {
  if (option !== undefined) return typeof option === 'string' ? marches.get(option) : option;
  const prepared = eagerPreparation(model)?.march;
  if (prepared !== undefined && marches.has(prepared)) return marches.get(prepared);
  const current = getMarch();
  if (!current)
    throw new QConfigError(
      `convert: no march selected; call setMarch(id) with a registered march (${marches.names().join(', ') || 'none; import a march package'}) or pass { march }`,
    );
  return current;
}

/**
 * Converts a model prepared by prepareQat (and calibrated or trained) into the march's fixed-point
 * model, eager style: QuantStubs quantize, quantized modules and FloatFunctional methods run the
 * march's integer modules (built on their first call, with the input scales they receive), DeQuantStubs
 * return float tensors. The QAT model is not modified. Fake-quants that never saw data are refused at
 * once (ConversionError); an op the march cannot convert is reported when the converted model first
 * runs it. To save or export the fixed-point model, prepare with prepareQatFx, which sees the graph.
 */
export function convert(model: Module, options: ConvertOptions = {}): Module {
  if (!(model instanceof Module)) throw new InvalidArgumentError('convert: model must be a Module');
  if (!model.namedModules().some(([, m]) => m instanceof FakeQuantize))
    throw new InvalidArgumentError(
      'convert: the model has no fake-quants; prepare it with prepareQat and calibrate it first',
    );
  const march = marchFor(model, options.march);
  const rounding = options.rounding ?? getDefaultRounding();
  const warn = options.onWarning ?? ((m: string) => console.warn(`[qtk] ${m}`));
  // Without a graph, a fake-quant that saw no data may belong to a module forward never calls: only
  // a model that saw none at all is refused now; the others refuse to run if they are ever called.
  const uncalibrated = uncalibratedFakeQuants(model);
  if (uncalibrated.length === namedFakeQuants(model).length) throw new ConversionError(march.id, [], uncalibrated);
  if (uncalibrated.length)
    warn(
      `convert: ${uncalibrated.length} fake-quant(s) never saw data (${uncalibrated.slice(0, 5).join(', ')}${uncalibrated.length > 5 ? ', ...' : ''}); ` +
        'their modules refuse to run if forward calls them: calibrate on data that reaches them',
    );
  const env = lateConversionEnv(march, rounding, warn);
  const out = deepCopy(model);
  out.eval();
  setFakeQuantize(out, 'VALIDATION');
  const replaced: string[] = [];
  for (const [path, m] of out.namedModules()) {
    if (path === '' || replaced.some((r) => path.startsWith(`${r}.`))) continue;
    const stand = standIn(m, path);
    if (!stand) continue;
    out.setSubmodule(path, stand);
    replaced.push(path);
  }
  return out;

  function standIn(m: Module, path: string): Module | null {
    if (m instanceof QatFloatFunctional)
      return new LateConvertedFunctional(m.functional, m.activationPostProcess, path, env);
    if (m instanceof FloatFunctional) return new LateConvertedFunctional(m, null, path, env);
    if (m instanceof CpuModule) {
      const qp = m.activationPostProcess?.calculateQparams() ?? null;
      return new CpuConvertedModule(
        m.module,
        qp,
        march.hooks.dequantizeNode?.({ march: march.id }) ?? new Dequantize(),
        qp
          ? (march.hooks.quantizeNode?.({ march: march.id, qparams: qp, rounding }) ?? new Quantize(qp, rounding))
          : null,
        path,
      );
    }
    if (m instanceof Identity) return null; // fuseModules' placeholders pass quantized values through
    if (m instanceof QatModule || m instanceof DeQuantStub || m.namedChildren().length === 0)
      return new LateConvertedModule(m, path, env);
    return null;
  }
}
