// Per-node lookup-table options (convertFx's `tableOptions`): validated once at the boundary,
// handed to each node's ConvertNodeContext, read by the table and composite rules.
import type { GraphModule, Node } from '@qtk/ir';
import {
  OptionsError,
  parseOptions,
  type ConvertNodeContext,
  type NodeTableOptions,
  type QuantDType,
  type TableOptions,
} from '@qtk/spec';
import { InvalidArgumentError } from '@qtk/tensor';
import { z } from 'zod';
import { planTable, type TablePlan } from '../modules/fixed-table-op.js';
import type { NonlinearFunction } from '../nonlinear-functions.js';
import type { SegmentDividing } from '../segment-table.js';

const finite = z.number().finite();

const tableFields = {
  inputRange: z
    .tuple([finite, finite])
    .refine(([lo, hi]) => lo < hi, { message: 'inputRange is [lo, hi] with lo < hi' })
    .optional(),
  dividing: z
    .union([
      z.enum(['even', 'curvature']),
      z
        .array(finite)
        .length(7, { message: 'explicit dividing points are the 7 points d[0..6] (input units)' })
        .refine((d) => d.every((v, k) => k === 0 || v >= d[k - 1]!), {
          message: 'dividing points must be non-decreasing',
        }),
    ])
    .optional(),
};
const rangeOrPoints = [
  (o: { inputRange?: unknown; dividing?: unknown }) => !(o.inputRange && Array.isArray(o.dividing)),
  { message: 'give either inputRange or explicit dividing points (they fix the range), not both' },
] as const;

/** One table's options (TableOptions in @qtk/spec). */
export const tableOptionsSchema = z
  .object(tableFields)
  .strict()
  .refine(...rangeOrPoints);

/** One node's options: its own table's, or per part of a composite (NodeTableOptions in @qtk/spec). */
export const nodeTableOptionsSchema = z
  .object({
    ...tableFields,
    exp: tableOptionsSchema.optional(),
    reciprocal: tableOptionsSchema.optional(),
    rsqrt: tableOptionsSchema.optional(),
  })
  .strict()
  .refine(...rangeOrPoints);

/** `tableOptions` of convertFx: per module path (or node name of a function call), one node's table options. */
export const convertTableOptionsSchema = z.record(z.string().min(1), nodeTableOptionsSchema);

export type ConvertTableOptions = Readonly<Record<string, NodeTableOptions>>;

/** The names a node answers to: its module path (call_module) and its node name. */
function namesOf(node: Node): string[] {
  return node.op === 'call_module' ? [node.target, node.name] : [node.name];
}

/**
 * Validates convertFx's `tableOptions` against its schema and the model: every key must be a module
 * path or a node name of `gm`; unknown names are all listed in one OptionsError.
 */
export function parseTableOptions(value: unknown, gm: GraphModule): ReadonlyMap<string, NodeTableOptions> {
  if (value === undefined) return new Map();
  const parsed = parseOptions(convertTableOptionsSchema, value, 'convertFx tableOptions') as Record<
    string,
    NodeTableOptions
  >;
  const known = new Set(gm.graph.nodes.flatMap(namesOf));
  const unknown = Object.keys(parsed).filter((k) => !known.has(k));
  if (unknown.length) {
    throw new OptionsError(
      'convertFx tableOptions',
      unknown.map((k) => ({
        path: k,
        message:
          'no module or node of this name in the model; key table options by module path (as in a qconfig moduleName, e.g. _generated_div_0) or, for a function call, by its node name (gm.graph.printTabular() lists them)',
      })),
    );
  }
  return new Map(Object.entries(parsed));
}

/** The table options of one node: by its module path first, then by its node name. */
export function tableOptionsOf(options: ReadonlyMap<string, NodeTableOptions>, node: Node): NodeTableOptions | null {
  for (const n of namesOf(node)) {
    const o = options.get(n);
    if (o) return o;
  }
  return null;
}

/** How a node's options are named in errors: the key the user most likely wrote. */
export function tableOptionsKey(ctx: ConvertNodeContext): string {
  return ctx.node.op === 'call_module' ? ctx.node.target : ctx.node.name;
}

/**
 * Checks that a node's table options fit the tables its rule builds: `['table']` for a single
 * table (inputRange / dividing at the top level), part names for a composite (softmax: exp,
 * reciprocal; layernorm: rsqrt), none for a rule that builds no table.
 */
export function checkTableOptionsFit(
  ctx: ConvertNodeContext,
  ruleName: string,
  tables: readonly string[] | undefined,
): void {
  const o = ctx.tableOptions;
  if (!o) return;
  const where = `convertFx tableOptions['${tableOptionsKey(ctx)}']`;
  const given = Object.keys(o).filter((k) => o[k as keyof NodeTableOptions] !== undefined);
  if (!tables || tables.length === 0) {
    throw new OptionsError(where, [
      {
        path: '',
        message: `node '${ctx.node.name}' converts by rule '${ruleName}', which builds no lookup table; remove these options`,
      },
    ]);
  }
  const allowed = tables.includes('table') ? ['inputRange', 'dividing'] : tables;
  const bad = given.filter((k) => !allowed.includes(k));
  if (bad.length) {
    const want = tables.includes('table')
      ? '{ inputRange?, dividing? }'
      : `{ ${tables.map((t) => `${t}?: { inputRange?, dividing? }`).join(', ')} }`;
    throw new OptionsError(
      where,
      bad.map((k) => ({
        path: k,
        message: `node '${ctx.node.name}' (rule '${ruleName}') has ${tables.includes('table') ? 'one table' : `the tables ${tables.join(', ')}`}, so its options are ${want}`,
      })),
    );
  }
}

/** One side of a table: its float32 scale and its dtype. */
export interface ScaleAndDtype {
  readonly s: number;
  readonly dt: QuantDType;
}

/**
 * planTable with the node's options for one of its tables (`part` null: the node's own table):
 * they override the rule's dividing strategy and restrict the table to an input range. A qint8
 * input has a 256-entry table with an exact entry per input: the options change nothing, a warning
 * says so. A table the options make impossible fails as an OptionsError naming the node.
 */
export function planTunedTable(
  ctx: ConvertNodeContext,
  part: 'exp' | 'reciprocal' | 'rsqrt' | null,
  fn: NonlinearFunction,
  input: ScaleAndDtype,
  output: ScaleAndDtype,
  dividing: SegmentDividing,
): TablePlan {
  const { s: sIn, dt: inDtype } = input;
  const opts: TableOptions | undefined = part === null ? (ctx.tableOptions ?? undefined) : ctx.tableOptions?.[part];
  const tuning = opts && (opts.inputRange !== undefined || opts.dividing !== undefined) ? opts : undefined;
  const label = part === null ? fn.name : `${part} table`;
  if (tuning && inDtype === 'qint8') {
    ctx.warn(
      `table options for the ${label} change nothing: a qint8 input indexes a 256-entry table with an exact entry per input (they shape qint16 segment tables)`,
    );
  }
  try {
    return planTable(fn, sIn, inDtype, output.s, output.dt, dividing, tuning);
  } catch (e) {
    if (!tuning || !(e instanceof InvalidArgumentError)) throw e;
    throw new OptionsError(
      `convertFx tableOptions['${tableOptionsKey(ctx)}']`,
      [{ path: part ?? '', message: `the ${label} of node '${ctx.node.name}': ${e.message}` }],
      { cause: e },
    );
  }
}
