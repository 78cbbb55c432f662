import type { GraphModule, Node } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import type { FusedOp, RoundingMode, Tensor } from '@qtk/tensor';
import { z } from 'zod';
import { checkTableOps } from './capability-ops.js';
import { QConfigError } from './errors.js';
import { parseOptions } from './options.js';
import type { QParams } from './observer.js';
import { roundingModeSchema } from './fake-quant.js';
import { quantDTypeSchema, type QuantDType } from './quant-dtype.js';

const scalar = z.union([z.number(), z.string(), z.boolean()]);

/**
 * One constraint on an op's attributes, as data. A numeric attribute given as an array (kernel
 * size [3, 3]) satisfies `max` / `min` when every element does. `note` records a rule only a hook
 * can check (it is listed in reports, not evaluated).
 */
export const constraintSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('max'), attr: z.string(), value: z.number() }).strict(),
  z.object({ kind: z.literal('min'), attr: z.string(), value: z.number() }).strict(),
  z.object({ kind: z.literal('oneOf'), attr: z.string(), values: z.array(scalar).nonempty() }).strict(),
  z.object({ kind: z.literal('equals'), attr: z.string(), value: scalar }).strict(),
  z.object({ kind: z.literal('note'), text: z.string() }).strict(),
]);
export type Constraint = z.infer<typeof constraintSchema>;

/** How a march computes an op (march-semantics.md §1); informative for reports and partitioning. */
export const OP_IMPLS = ['integer', 'passthrough', 'table', 'segment_table', 'composite'] as const;

export const opCapabilitySchema = z
  .object({
    /** Op name as the IR and core use it (ONNX names: 'Conv', 'Add', 'Sigmoid', 'AveragePool', ...). */
    op: z.string().min(1),
    /** Activation dtypes the op accepts; default: the march's `activationDtypes`. */
    dtypes: z.array(quantDTypeSchema).nonempty().optional(),
    impl: z.enum(OP_IMPLS).optional(),
    /** Catalog ops that may be fused into this one ('BatchNormalization', 'Add', 'Relu', 'Clip' for a ReLU6). */
    fusable: z.array(z.string()).optional(),
    constraints: z.array(constraintSchema).default([]),
  })
  .strict();
export type OpCapability = z.output<typeof opCapabilitySchema>;

/** A march's capability table (march-semantics.md §2), pure data, read by prepare, partition and convert. */
export const capabilityTableSchema = z
  .object({
    version: z.literal(1),
    /** Activation dtypes, e.g. ['qint8'] or ['qint8', 'qint16']. */
    activationDtypes: z.array(quantDTypeSchema).nonempty(),
    /** Dtypes of high-precision ("out" qconfig) outputs: ['qint32']. */
    highPrecisionOutputDtypes: z.array(quantDTypeSchema).default(['qint32']),
    weightDtypes: z.array(quantDTypeSchema).nonempty(),
    weightPerChannel: z.boolean(),
    rounding: roundingModeSchema.default('half_up'),
    ops: z.array(opCapabilitySchema),
  })
  .strict()
  .superRefine((t, ctx) => {
    const seen = new Set<string>();
    t.ops.forEach((o, i) => {
      if (seen.has(o.op))
        ctx.addIssue({ code: z.ZodIssueCode.custom, path: ['ops', i, 'op'], message: `op '${o.op}' listed twice` });
      seen.add(o.op);
    });
  });
export type CapabilityTable = z.output<typeof capabilityTableSchema>;
export type CapabilityTableInput = z.input<typeof capabilityTableSchema>;

/**
 * A user's options for one lookup table (convertFx's `tableOptions`, validated there): the input
 * range its table segments cover (where the data is) and how its dividing points are chosen ('even',
 * 'curvature', or the seven points d[0..6] in input units). They shape int16-input segment tables;
 * a 256-entry int8 table has an exact entry per input and has nothing to tune.
 */
export interface TableOptions {
  readonly inputRange?: readonly [number, number];
  readonly dividing?: 'even' | 'curvature' | readonly number[];
}

/** The table options of one node: its own table's, or per table of a composite (softmax: exp, reciprocal; layernorm: rsqrt). */
export interface NodeTableOptions extends TableOptions {
  readonly exp?: TableOptions;
  readonly reciprocal?: TableOptions;
  readonly rsqrt?: TableOptions;
}

/** A node as the march sees it, before and at conversion: its catalog op and, for a call_module node, its module. */
export interface NodeOpContext {
  readonly march: string;
  readonly node: Node;
  /**
   * The float (or fused) module of a call_module node, with its QAT wrapper removed; for a
   * FloatFunctional call the FloatFunctional (`node.method` names the method); null for functions
   * and tensor methods (`node.target` names them, `node.args` holds the constant arguments).
   */
  readonly module: Module | null;
  /**
   * The node's op in QTK's op catalog ('Conv', 'Gemm', 'Relu', 'Add', ...), as a capability table
   * names it; for a fused module its layer's op. Null when the catalog has none (QuantStub,
   * DeQuantStub, composite QAT forms, user modules).
   */
  readonly op: string | null;
  /** The op's attributes as the catalog reports them (a Conv: spatialDims, kernelShape, stride, padding, dilation, groups). */
  readonly attrs: Readonly<Record<string, unknown>>;
  /**
   * A fused conv module's parts: the layer's op and attributes, the add (which node argument is
   * the addend) and the activation; null for every other node. BatchNormalization is already folded
   * into `weight` and the layer's bias.
   */
  readonly fused: FusedOp | null;
}

/** What convert hands a march for one node. */
export interface ConvertNodeContext extends NodeOpContext {
  /**
   * The QAT module's weight (BN already folded) and its fake-quant's qparams, with the layer's float
   * bias (BN folded too; null when the layer has none); null when there is no weight fake-quant.
   */
  readonly weight: { readonly value: Tensor; readonly qparams: QParams; readonly bias: Tensor | null } | null;
  /** The qparams of the quantized value a node argument carries in the converted model; null for a float value. */
  qparamsOf(arg: Node): QParams | null;
  /** The qparams of this node's activation fake-quant; null when it has none (pass-through ops, high-precision outputs). */
  readonly outputQparams: QParams | null;
  /** The rounding R of real numbers (march-semantics.md §0). */
  readonly rounding: RoundingMode;
  /** Conversion warnings (saturating multipliers, ...) go here. */
  warn(message: string): void;
  /** The user's table options for this node (by module path or node name), validated; null or absent when none. */
  readonly tableOptions?: NodeTableOptions | null;
  /**
   * The shape of a module node's first input as calibration last saw it; absent when unknown (before
   * calibration, supportsNode). Rules whose feasibility depends on it (an adaptive pool's windows) read it.
   */
  readonly inputShape?: readonly number[];
}

/** A fixed-point replacement: the module run in place of the node, and the qparams of what it outputs. */
export interface ConvertedNode {
  /** Called with the node's own arguments (quantized values arrive as the fixed-point tensors of the march). */
  readonly module: Module;
  /** Qparams of the output; null when the output is a float tensor (a DeQuantStub). */
  readonly outputQparams: QParams | null;
  /**
   * The arguments the module is called with, where they differ from the node's (an imported ONNX reduce,
   * called with its kind among its arguments, becomes a reduce module's `(x, axes, keepdims)`).
   */
  readonly args?: readonly unknown[];
}

/**
 * What a march's prepare pass (and a composite op's prepare rewrite) sees, after prepareQatFx has
 * swapped in the QAT modules and inserted the activation fake-quants. Passes edit `gm` in place.
 */
export interface MarchPrepareContext {
  readonly gm: GraphModule;
  readonly march: MarchBackendV1;
  /** Nodes whose output is fake-quantized; a pass that inserts a fake-quant node adds it here. */
  readonly quantized: Set<Node>;
  /**
   * A new fake-quant for an intermediate value computed for `node`: the node's activation qconfig,
   * at `dtype` when given; null when the node has no activation qconfig. Errors name the node.
   */
  intermediateFakeQuant(node: Node, options?: { readonly dtype?: QuantDType }): Module | null;
  warn(message: string): void;
}

/** A graph pass a march adds to prepareQatFx, run after the activation fake-quants are in place. */
export interface MarchPreparePass {
  readonly name: string;
  run(ctx: MarchPrepareContext): void;
}

/** A rewrite of the fused float graph, run by prepareQatFx before any QAT module is swapped in. */
export interface MarchGraphRewrite {
  readonly name: string;
  run(gm: GraphModule): void;
}

/**
 * What is known of a node before calibration, when a heterogeneous partition (or a check) asks
 * whether the march converts it: the node and its catalog op, without qparams.
 */
export interface NodeSupportContext extends NodeOpContext {
  /** The activation dtype the node's qconfig asks for; null for a high-precision output or none. */
  readonly dtype: QuantDType | null;
}

/** Why a march cannot run a node, from its converter: no rule, or the table refuses the rule's op. */
export type NodeSupportReason = 'op not in table' | 'dtype' | 'attribute constraint' | 'no conversion rule';

export type NodeSupport =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: NodeSupportReason; readonly detail: string };

/** Hooks conversion calls; each is optional, the capability table drives everything else. */
export interface MarchHooksV1 {
  /** Extra qconfig checks beyond the table's dtypes; throw QConfigError naming the module. */
  checkQConfig?(ctx: {
    module: string;
    moduleType: string;
    activationDtype: QuantDType | null;
    weightDtype: QuantDType | null;
  }): void;
  /**
   * Rewrites of the float graph prepare runs after fusion, before the QAT swap (in order), e.g. a
   * pattern the march computes another way; the QAT forms and fake-quants follow the rewritten graph.
   */
  readonly prepareRewrites?: readonly MarchGraphRewrite[];
  /** Passes prepare runs after inserting the activation fake-quants and before its checks (in order). */
  readonly preparePasses?: readonly MarchPreparePass[];
  /**
   * Passes prepare runs after `preparePasses` when asked to optimize the graph (prepareQatFx's
   * `optimizeGraph`, horizon_plugin_pytorch's `optimize_graph`), e.g. cat inputs tied to the cat's scale.
   */
  readonly optimizeGraphPasses?: readonly MarchPreparePass[];
  /**
   * Graph passes before conversion (e.g. a cat-scale unification); may edit the graph of the copy it is
   * given. The copy holds no modules yet: its call_module nodes name modules of `qatModel`.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a hook that edits the graph in place may simply end without a return
  prepareConvert?(gm: GraphModule, qatModel: GraphModule): GraphModule | void;
  /**
   * The fixed-point replacement of a node whose inputs include a quantized value (or a QuantStub);
   * undefined when the march has no rule for it. Throw UnsupportedOpError for an op the table
   * rejects (dtype, attributes); convert collects these and reports every node at once.
   */
  convertNode?(ctx: ConvertNodeContext): ConvertedNode | undefined;
  /**
   * Whether convertNode converts this node, decided by the same rules and table checks (the one
   * predicate the hybrid partition, the checks and the device tables ask). A march without it is
   * judged by its capability table alone. Conversion may still fail where only qparams tell
   * (a per-channel input, a missing output scale); heterogeneous conversion then runs the node on the CPU.
   */
  supportsNode?(ctx: NodeSupportContext): NodeSupport;
  /** Qparams of a preserved QAT module's float output quantized back into the fixed-point model. */
  quantizeNode?(ctx: { march: string; qparams: QParams; rounding: RoundingMode }): Module;
  /** The module turning a quantized value back into float (in front of a preserved QAT module). */
  dequantizeNode?(ctx: { march: string }): Module;
}

/** A march backend: an id, a capability table as data, and conversion hooks. */
export interface MarchBackendV1 {
  readonly apiVersion: 1;
  /** The march's registered id (the built-in marches' or a third party's). */
  readonly id: string;
  readonly description?: string;
  readonly capabilities: CapabilityTable;
  readonly hooks: MarchHooksV1;
}

export type OpSupport =
  | { readonly ok: true; readonly capability: OpCapability }
  | { readonly ok: false; readonly reason: string };

function attrValues(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [v];
}

/** Whether a march's table supports `op` with this dtype and these attributes (data only, no hooks). */
export function checkOpSupport(
  table: CapabilityTable,
  query: { op: string; dtype?: QuantDType; attrs?: Readonly<Record<string, unknown>> },
): OpSupport {
  const cap = table.ops.find((o) => o.op === query.op);
  if (!cap) return { ok: false, reason: `op '${query.op}' is not in the capability table` };
  const dtypes = cap.dtypes ?? table.activationDtypes;
  if (query.dtype !== undefined && !dtypes.includes(query.dtype)) {
    return { ok: false, reason: `dtype ${query.dtype} not supported (supported: ${dtypes.join(', ')})` };
  }
  const attrs = query.attrs ?? {};
  for (const c of cap.constraints) {
    if (c.kind === 'note') continue;
    const v = attrs[c.attr];
    if (v === undefined) continue;
    const vs = attrValues(v);
    const bad =
      c.kind === 'max'
        ? vs.some((x) => typeof x !== 'number' || x > c.value)
        : c.kind === 'min'
          ? vs.some((x) => typeof x !== 'number' || x < c.value)
          : c.kind === 'oneOf'
            ? vs.some((x) => !(c.values as unknown[]).includes(x))
            : vs.some((x) => x !== c.value);
    if (bad) {
      const want =
        c.kind === 'max'
          ? `<= ${c.value}`
          : c.kind === 'min'
            ? `>= ${c.value}`
            : c.kind === 'oneOf'
              ? `one of ${c.values.join(', ')}`
              : `= ${c.value}`;
      return { ok: false, reason: `${c.attr} = ${JSON.stringify(v)} violates ${c.attr} ${want}` };
    }
  }
  return { ok: true, capability: cap };
}

/** Throws a QConfigError when the march cannot carry `dtype` as an activation (qint16 on an int8-only march). */
export function assertActivationDtype(march: MarchBackendV1, dtype: QuantDType, module?: string): void {
  if (!march.capabilities.activationDtypes.includes(dtype)) {
    throw new QConfigError(
      `march '${march.id}' has no ${dtype} activations (it supports ${march.capabilities.activationDtypes.join(', ')}); ` +
        'use a qconfig with a supported dtype for this module, or choose another march',
      module !== undefined ? { module } : undefined,
    );
  }
}

/**
 * Validates a march's capability table (OptionsError with the zod path) and returns the parsed
 * table; an op the op catalog does not know throws UnknownOpError naming close ops.
 */
export function defineCapabilities(table: CapabilityTableInput): CapabilityTable {
  const parsed = parseOptions(capabilityTableSchema, table, 'capability table');
  checkTableOps(parsed.ops, 'capability table');
  return parsed;
}
