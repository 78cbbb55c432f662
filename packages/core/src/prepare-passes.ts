import { FakeQuantize, type QConfig } from '@qtk/fake-quant';
import { setModuleCopyOnWrite } from '@qtk/fusion';
import type { Node } from '@qtk/ir';
import { DeQuantStub, FloatFunctional, type Module, QuantStub } from '@qtk/nn';
import { opOfModule, opOfNode, QConfigError, setFakeQuantRole, type MarchBackendV1 } from '@qtk/spec';
import { compositeQatForm } from '@qtk/fixed-point';
import { checkQconfigForMarch } from './march.js';
import { QatModule, weightedLayer } from './qat-module.js';
import { moduleOf, pathOf, qconfigOf } from './qconfig-of.js';
import { modulesOnlyInWrappedMethods } from './fx-wrapped-modules.js';
import type { PrepareContext } from './prepare-context.js';

/** A fake-quant from a qconfig factory; its errors become QConfigErrors naming `module`. */
export function createFakeQuant(
  factory: QConfig['activation'],
  module: string,
  overrides: Parameters<NonNullable<QConfig['activation']>>[0] = {},
): FakeQuantize | null {
  try {
    return factory ? factory(overrides) : null;
  } catch (e) {
    if (e instanceof QConfigError && e.module !== null) throw e;
    throw new QConfigError(e instanceof Error ? e.message : String(e), { module, cause: e });
  }
}

/**
 * The composite QAT form of a module (compositeOps: softmax, layernorm, ...) when the march's table
 * runs its op as a composite: each intermediate gets its own fake-quant of the module's activation
 * qconfig at qint16 (qint8 on a march without qint16).
 */
function compositeFormFor(march: MarchBackendV1, module: Module, qc: QConfig, path: string): Module | null {
  const factory = qc.activation;
  if (!factory) return null;
  const table = march.capabilities;
  const dtype = table.activationDtypes.includes('qint16') ? 'qint16' : 'qint8';
  return compositeQatForm(table, module, () => createFakeQuant(factory, path, { dtype })!);
}

/**
 * The QAT form of `module` under qconfig `qc` (`path` names it in errors), or null when it has none:
 * stubs get their fake-quant, conv/linear families and fused modules weight and output fake-quants,
 * requantizing modules (sigmoid, pooling, softmax, ...) an output fake-quant.
 */
export function qatReplacementFor(march: MarchBackendV1, module: Module, qc: QConfig, path: string): QatModule | null {
  if (module instanceof FloatFunctional || module instanceof DeQuantStub || module instanceof QatModule) return null;
  const w = weightedLayer(module);
  let replacement: QatModule | null = null;
  if (module instanceof QuantStub) {
    const act =
      module.scale !== null
        ? new FakeQuantize({
            observer: 'fixed_scale',
            observerOptions: { scale: module.scale },
            dtype: qc.activation?.options.dtype ?? 'qint8',
          })
        : createFakeQuant(qc.activation, path);
    if (act) replacement = new QatModule(module, null, act);
  } else if (w) {
    const weight = w.layer.weight;
    const wfq = createFakeQuant(
      qc.weight,
      path,
      qc.weight && (qc.weight.options.chAxis ?? 0) >= 0
        ? { chAxis: w.chAxis, numChannels: weight.shape[w.chAxis]! }
        : {},
    );
    replacement = new QatModule(module, wfq, createFakeQuant(qc.activation, path));
  } else if (opOfModule(module)?.ownOutputScale) {
    // sigmoid, pooling, softmax, ...: the op catalog says the output is a new value
    const act = createFakeQuant(qc.activation, path);
    if (act) replacement = new QatModule(compositeFormFor(march, module, qc, path) ?? module, null, act);
  }
  if (replacement) {
    checkQconfigForMarch(march, path, module.constructor.name, {
      activation: replacement.activationPostProcess,
      weight: replacement.weightFakeQuant,
    });
  }
  return replacement;
}

/** Swaps conv/linear families, fused modules, quantizing modules and stubs for their QAT forms. */
export function swapQatModulesPass(ctx: PrepareContext): void {
  const { gm } = ctx;
  const done = new Map<string, Module>();
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module') continue;
    if (done.has(node.target)) continue; // a module called twice is swapped once (shared)
    const module = moduleOf(gm, node);
    if (!module) continue;
    const { qconfig: qc, path } = qconfigOf(ctx, node);
    if (!qc) continue;
    const replacement = qatReplacementFor(ctx.march, module, qc, path);
    if (!replacement) continue;
    setModuleCopyOnWrite(gm, node.target, replacement, ctx.owned);
    done.set(node.target, replacement);
    ctx.quantized.add(node);
  }
}

/** Inserts an activation fake-quant after functional ops and FloatFunctional calls that produce new values. */
export function insertActivationFakeQuantPass(ctx: PrepareContext): void {
  const { gm } = ctx;
  const graph = gm.graph;
  for (const node of [...graph.nodes]) {
    // functions, tensor methods and FloatFunctional methods whose op takes its own output scale
    const functional = node.op === 'call_function' || node.op === 'call_method';
    if (!functional && !(node.op === 'call_module' && node.method !== undefined)) continue;
    if (!opOfNode(gm, node)?.ownOutputScale) continue;
    const { qconfig: qc, path } = qconfigOf(ctx, node);
    if (!qc?.activation) continue;
    const fq = createFakeQuant(qc.activation, `${path || '<root>'} (${node.name})`)!;
    checkQconfigForMarch(ctx.march, `${path || '<root>'} (${node.name})`, node.method ?? node.target, {
      activation: fq,
      weight: null,
    });
    const name = gm.addGeneratedSubmodule(`${node.name}_activation_post_process`.replace(/[^A-Za-z0-9_]/g, '_'), fq);
    const fqNode = graph.insertingAfter(node, () => graph.callModule(name, [node]));
    setFakeQuantRole(fqNode, 'activation');
    node.replaceAllUsesWith(fqNode, { filter: (u) => u !== fqNode });
    ctx.quantized.add(fqNode);
  }
}

/**
 * Every path from a graph input to a quantized node must pass a QuantStub: otherwise the error
 * names the input and the first quantized node it reaches.
 */
export function checkQuantStubPass(ctx: PrepareContext): void {
  const { gm } = ctx;
  const hasQuantStub = gm.graph.nodes.some((n) => {
    const m = moduleOf(gm, n);
    return (m instanceof QatModule ? m.module : m) instanceof QuantStub;
  });
  for (const input of gm.graph.placeholders) {
    const seen = new Set<Node>();
    const stack = [...input.users];
    while (stack.length) {
      const n = stack.pop()!;
      if (seen.has(n)) continue;
      seen.add(n);
      const m = moduleOf(gm, n);
      const inner = m instanceof QatModule ? m.module : m;
      if (inner instanceof QuantStub) continue;
      if (ctx.quantized.has(n)) {
        throw new QConfigError(
          `graph input '${input.name}' reaches '${n.name}' (${inner?.constructor.name ?? n.target}) without passing a QuantStub; ` +
            (hasQuantStub
              ? `add a QuantStub to the model and call it on '${input.name}' before '${n.name}'`
              : 'the model has no QuantStub (an imported ONNX graph has none): pass prepareQatFx(model, qconfigDict, ' +
                '{ inputQuantStubs: { scale: 1 / 128 } }) to put one after every graph input (1/128 suits inputs in [-1, 1]; ' +
                `inputQuantStubs: true observes the scale instead), or add a QuantStub to the model and call it on '${input.name}'`),
          { module: n.op === 'call_module' ? n.target : pathOf(n) || '<root>' },
        );
      }
      stack.push(...n.users);
    }
  }
}

/**
 * Gives modules called only inside fxWrap-ed methods their QAT forms (by their own path's qconfig),
 * so the wrapped code, which runs for real, calls QAT modules.
 */
export function swapWrappedModulesPass(ctx: PrepareContext): void {
  const replaced: string[] = [];
  for (const [path, module] of modulesOnlyInWrappedMethods(ctx.gm)) {
    if (replaced.some((r) => path.startsWith(`${r}.`))) continue;
    const qc = ctx.resolver.resolve(path);
    if (!qc) continue;
    const replacement = qatReplacementFor(ctx.march, module, qc, path);
    if (!replacement) continue;
    setModuleCopyOnWrite(ctx.gm, path, replacement, ctx.owned);
    replaced.push(path);
  }
}
