import { QTensor } from '@qtk/fixed-point';
import { type GraphModule, Node } from '@qtk/ir';
import { noGrad, opOfFunction, opOfMethod, opOfModule, type OpMatch, Tensor, traceables } from '@qtk/tensor';
import {
  OnnxExportError,
  type AttributeMsg,
  DataType,
  encodeModel,
  type NodeMsg,
  type TensorMsg,
  type ValueInfoMsg,
  QTK_VISUAL_DOMAIN,
  QTK_VISUAL_DOMAIN_VERSION,
} from '@qtk/onnx';
import type { QuantizedInput } from '../quantized-input.js';
import { asFakeQuant, describeModule, quantAttributes, type QuantInfo } from './describe-module.js';
import {
  distinctNames,
  type FlatValue,
  flattenToAttributes,
  stringAttr,
  typedArrayProto,
} from './visual-attributes.js';
import { attrAt } from '@qtk/ir';
import { callArgs, constantPart, isValue, quantOf, sameQuant, valueInfo } from './visual-values.js';

export interface ExportQuantizedOnnxOptions {
  /** Names of the graph inputs (default: the GraphModule's placeholder names). */
  inputNames?: string[];
  /** Declare dim 0 of inputs and outputs as the symbolic `batch` (default true). */
  dynamicBatch?: boolean;
  /** Write parameters, buffers and long tables as initializers (default true; false gives a small structure-only file). */
  weights?: boolean;
  /** The march to record when the model records none (`gm.meta.march`, set by prepareQatFx and convertFx). */
  march?: string;
}

/**
 * Writes a QAT, calibrated or fixed-point GraphModule as an ONNX model for graph viewers (Netron):
 * one node of domain `qtk` per call in the graph, its op type the catalog op (else the module's
 * class), its attributes the module path, class, march, fused parts, the scales, dtypes and channel
 * axes of its inputs, outputs and weights, and its stored config (requantize plans, output scales);
 * weights are initializers. The model runs once on `exampleInputs` for shapes and value scales. The
 * file describes the model; no runtime executes `qtk` nodes, and importOnnx refuses it.
 */
export function exportQuantizedOnnxBytes(
  gm: GraphModule,
  exampleInputs: QuantizedInput | readonly QuantizedInput[],
  options: ExportQuantizedOnnxOptions = {},
): Uint8Array {
  const dynamicBatch = options.dynamicBatch ?? true;
  const withWeights = options.weights ?? true;
  const inputs = isValue(exampleInputs) ? [exampleInputs] : [...exampleInputs];
  const graph = gm.graph;
  const placeholders = graph.placeholders;
  if (placeholders.length !== inputs.length)
    throw new OnnxExportError(
      `exportQuantizedOnnx: the model takes ${placeholders.length} inputs, got ${inputs.length} example inputs`,
    );
  const inputNames = options.inputNames ?? placeholders.map((p) => p.name);
  if (inputNames.length !== placeholders.length || new Set(inputNames).size !== inputNames.length)
    throw new OnnxExportError(
      `exportQuantizedOnnx: inputNames must be ${placeholders.length} distinct names, got [${inputNames.join(', ')}]`,
    );
  const march = typeof gm.meta.march === 'string' ? gm.meta.march : options.march;
  const stage = typeof gm.meta.kind === 'string' ? gm.meta.kind : null;

  const taken = new Set<string>(inputNames);
  const unique = (base: string): string => {
    let name = base;
    for (let k = 1; taken.has(name); k++) name = `${base}_${k}`;
    taken.add(name);
    return name;
  };
  const env = new Map<Node, unknown>();
  const names = new Map<Node, string[]>();
  const quant = new Map<Node, (QuantInfo | null)[]>();
  const nodes: NodeMsg[] = [];
  const initializers: TensorMsg[] = [];
  const initializerOf = new Map<object, string>();
  const graphInputs: ValueInfoMsg[] = [];
  let graphOutputs: ValueInfoMsg[] = [];

  const initializer = (key: object, name: string, make: (n: string) => TensorMsg): string => {
    const known = initializerOf.get(key);
    if (known) return known;
    const n = unique(name);
    initializers.push(make(n));
    initializerOf.set(key, n);
    return n;
  };
  const tensorInitializer = (t: Tensor, name: string): string =>
    initializer(t, name, (n) => {
      const proto = typedArrayProto(n, t.values() as ArrayLike<number>, t.shape);
      return t.dtype === 'bool' ? { ...proto, data_type: DataType.BOOL } : proto;
    });

  /** The tensor arguments of a call in order (nested lists too): ONNX names, runtime values, quantization. */
  const dataInputs = (node: Node) => {
    const out: { name: string; value: Tensor | QTensor; quant: QuantInfo | null }[] = [];
    const visit = (a: unknown) => {
      if (Array.isArray(a)) a.forEach(visit);
      else if (a instanceof Node) {
        const v = env.get(a);
        const n = names.get(a);
        if (isValue(v) && n?.length === 1) out.push({ name: n[0]!, value: v, quant: quant.get(a)?.[0] ?? null });
      } else if (a && typeof a === 'object' && !isValue(a)) Object.values(a).forEach(visit);
      else if (a instanceof Tensor)
        out.push({ name: tensorInitializer(a, `${node.name}_const`), value: a, quant: null });
    };
    [...node.args, node.kwargs].forEach(visit);
    return out;
  };

  /** Names and quantization of a call's outputs: the value itself, or each tensor of a returned list. */
  const outputsOf = (node: Node, out: unknown, fromModule: QuantInfo | null, keep: QuantInfo | null) => {
    const values = isValue(out) ? [out] : Array.isArray(out) && out.length > 0 && out.every(isValue) ? out : null;
    if (!values) return null;
    const outNames = values.length === 1 ? [unique(node.name)] : values.map((_, i) => unique(`${node.name}_${i}`));
    const qs = (values as (Tensor | QTensor)[]).map((v) => (v instanceof QTensor ? quantOf(v) : (fromModule ?? keep)));
    names.set(node, outNames);
    quant.set(node, qs);
    return { values: values as (Tensor | QTensor)[], outNames, qs };
  };

  const ioAttributes = (ins: ReturnType<typeof dataInputs>, outs: (Tensor | QTensor)[], qs: (QuantInfo | null)[]) => {
    const attrs: AttributeMsg[] = [];
    const side = (kind: string, list: { value: Tensor | QTensor; quant: QuantInfo | null }[]) =>
      list.forEach(({ value, quant: q }, i) => {
        const prefix = list.length === 1 ? `${kind}_` : `${kind}_${i}_`;
        if (q) attrs.push(...quantAttributes(prefix, q));
        else attrs.push(stringAttr(`${prefix}dtype`, value.dtype));
      });
    side('input', ins);
    side(
      'output',
      outs.map((value, i) => ({ value, quant: qs[i] ?? null })),
    );
    return attrs;
  };

  /** The input's quantization carried through an op that keeps its input scale (catalog ownOutputScale false). */
  const keptQuant = (match: OpMatch | null, ins: ReturnType<typeof dataInputs>): QuantInfo | null => {
    if (!match || match.ownOutputScale) return null;
    const qs = ins.map((i) => i.quant);
    const first = qs[0];
    return first && qs.every((q) => q && sameQuant(q, first)) ? first : null;
  };

  const commonAttributes = (node: Node): AttributeMsg[] => {
    const attrs: AttributeMsg[] = [];
    if (march) attrs.push(stringAttr('march', march));
    const meta: FlatValue = { attributes: [], arrays: [] };
    flattenToAttributes(node.meta, 'meta', meta);
    return [...attrs, ...meta.attributes];
  };

  // Described before the run, so fake-quant nodes show the states the model is in, not the frozen one below.
  const descriptions = new Map(
    graph.nodes
      .filter((n) => n.op === 'call_module')
      .map((n) => [n, describeModule(gm.getSubmodule(n.target), n.method)] as const),
  );
  const wasTraining = gm.training;
  gm.eval();
  // Observers must not see the example: fake-quants run frozen (VALIDATION) and get their states back.
  const fakeQuants = gm.modules().flatMap((m) => {
    const fq = asFakeQuant(m);
    return fq ? [[fq, fq.fakeQuantState] as const] : [];
  });
  for (const [fq] of fakeQuants) fq.setFakeQuantState('VALIDATION');
  try {
    noGrad(() => {
      for (const node of graph.nodes) {
        switch (node.op) {
          case 'placeholder': {
            const i = placeholders.indexOf(node);
            const v = inputs[i]!;
            env.set(node, v);
            names.set(node, [inputNames[i]!]);
            quant.set(node, [v instanceof QTensor ? quantOf(v) : null]);
            graphInputs.push(valueInfo(inputNames[i]!, v, dynamicBatch));
            continue;
          }
          case 'get_attr': {
            const v = attrAt(gm, node.target);
            env.set(node, v);
            if (v instanceof Tensor) names.set(node, [tensorInitializer(v, node.target)]);
            else if (v instanceof QTensor) {
              names.set(node, [tensorInitializer(v.data, node.target)]);
              quant.set(node, [quantOf(v)]);
            }
            continue;
          }
          case 'call_module': {
            const m = gm.getSubmodule(node.target);
            const args = callArgs(node, env);
            const out = node.method
              ? (m as unknown as Record<string, (...a: unknown[]) => unknown>)[node.method]!(...args)
              : m.call(...args);
            env.set(node, out);
            const d = descriptions.get(node)!;
            const ins = dataInputs(node);
            const kept = d.output ? null : keptQuant(opOfModule(m, node.method), ins);
            const outs = outputsOf(node, out, d.output, kept);
            if (!outs)
              throw new OnnxExportError(
                `exportQuantizedOnnx: module '${node.target}' (${m.constructor.name}) returned no tensor; only calls returning tensors or lists of tensors can be drawn`,
              );
            const weightNames = withWeights
              ? [
                  ...d.weights.map(([k, t]) => tensorInitializer(t, `${node.target}.${k}`)),
                  ...d.arrays.map(([k, a]) =>
                    initializer(a, `${node.target}.${k}`, (n) => typedArrayProto(n, a, [a.length])),
                  ),
                ]
              : [];
            nodes.push({
              name: node.name,
              op_type: d.opType,
              domain: QTK_VISUAL_DOMAIN,
              input: [...ins.map((i) => i.name), ...weightNames],
              output: outs.outNames,
              attribute: distinctNames([
                stringAttr('module_path', node.target),
                ...commonAttributes(node),
                ...d.attributes,
                ...ioAttributes(ins, outs.values, outs.qs),
              ]),
            });
            continue;
          }
          case 'call_function':
          case 'call_method': {
            const args = callArgs(node, env);
            let out: unknown;
            if (node.op === 'call_function') out = traceables.get(node.target).fn(...args);
            else {
              const [self, ...rest] = args as [Record<string, (...a: unknown[]) => unknown>, ...unknown[]];
              out = self[node.target]!(...rest);
            }
            env.set(node, out);
            if (node.op === 'call_function' && node.target === 'getitem' && isValue(out)) {
              // an element of a listed output: the producer's ONNX output, no node of its own
              const src = node.args[0] as Node;
              const k = args[1] as number;
              const name = names.get(src)?.[k];
              names.set(node, name ? [name] : []);
              quant.set(node, [quant.get(src)?.[k] ?? null]);
              continue;
            }
            const site = { args: node.args, kwargs: node.kwargs };
            const match = node.op === 'call_function' ? opOfFunction(node.target, site) : opOfMethod(node.target, site);
            const ins = dataInputs(node);
            const outs = outputsOf(node, out, null, keptQuant(match, ins));
            if (!outs) continue; // shape arithmetic (x.shape[0], ...): its numbers show as its consumers' attributes
            const constants: FlatValue = { attributes: [], arrays: [] };
            node.args.forEach((a, i) => {
              flattenToAttributes(constantPart(a), `arg_${i}`, constants);
            });
            flattenToAttributes(constantPart(node.kwargs), '', constants);
            nodes.push({
              name: node.name,
              op_type: match?.op ?? node.target,
              domain: QTK_VISUAL_DOMAIN,
              input: ins.map((i) => i.name),
              output: outs.outNames,
              attribute: distinctNames([
                stringAttr(node.op === 'call_function' ? 'function' : 'tensor_method', node.target),
                ...commonAttributes(node),
                ...constants.attributes,
                ...ioAttributes(ins, outs.values, outs.qs),
              ]),
            });
            continue;
          }
          case 'output': {
            const outNodes = (Array.isArray(node.args[0]) ? node.args[0] : [node.args[0]]) as Node[];
            graphOutputs = outNodes.map((n, i) => {
              const v = env.get(n);
              const name = names.get(n)?.[0];
              if (!name || !isValue(v))
                throw new OnnxExportError(`exportQuantizedOnnx: output ${i} is not a tensor computed by the graph`);
              return valueInfo(name, v, dynamicBatch);
            });
          }
        }
      }
    });
  } finally {
    if (wasTraining) gm.train();
    for (const [fq, state] of fakeQuants) fq.setFakeQuantState(state);
  }
  // graph outputs have their own value info; a getitem names its producer's output, described once
  const described = new Set(graphOutputs.map((o) => o.name));
  const valueInfos: ValueInfoMsg[] = [];
  for (const node of graph.nodes) {
    if (node.op !== 'call_module' && node.op !== 'call_function' && node.op !== 'call_method') continue;
    const v = env.get(node);
    const vs = isValue(v) ? [v] : Array.isArray(v) ? v : [];
    (names.get(node) ?? []).forEach((n, i) => {
      if (described.has(n) || !isValue(vs[i])) return;
      described.add(n);
      valueInfos.push(valueInfo(n, vs[i], dynamicBatch));
    });
  }
  const metadata = [
    { key: 'qtk.visualization', value: 'one node per module call; not runnable' },
    ...(stage ? [{ key: 'qtk.stage', value: stage }] : []),
    ...(march ? [{ key: 'qtk.march', value: march }] : []),
  ];
  return encodeModel({
    ir_version: 7,
    producer_name: 'qtk',
    producer_version: '0.1.0',
    opset_import: [
      { domain: '', version: 13 },
      { domain: QTK_VISUAL_DOMAIN, version: QTK_VISUAL_DOMAIN_VERSION },
    ],
    graph: {
      name: gm.className,
      node: nodes,
      initializer: initializers,
      input: graphInputs,
      output: graphOutputs,
      value_info: valueInfos,
    },
    metadata_props: metadata,
  });
}
