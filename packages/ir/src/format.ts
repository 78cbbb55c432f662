// Text renderings of graphs: the FX-style table of printTabular() and argument formatting.
import { Tensor } from '@qtk/tensor';
import { Module } from '@qtk/nn';
import { Node, type Argument } from './node.js';

function quote(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
}

/** An argument as torch.fx prints it: nodes by name, strings quoted, objects as `{'key': value}`. */
export function formatArgument(arg: Argument): string {
  if (arg instanceof Node) return arg.name;
  if (typeof arg === 'string') return quote(arg);
  if (arg === undefined) return 'undefined';
  if (arg === null) return 'null';
  if (typeof arg === 'number') return Object.is(arg, -0) ? '-0' : String(arg);
  if (typeof arg === 'boolean' || typeof arg === 'bigint') return String(arg);
  if (Array.isArray(arg)) return `[${arg.map(formatArgument).join(', ')}]`;
  if (arg instanceof Tensor) return `Tensor(shape=[${arg.shape.join(', ')}], dtype=${arg.dtype})`;
  if (arg instanceof Module) return `<${arg.constructor.name}>`;
  if (typeof arg === 'function') return `<function ${arg.name || 'anonymous'}>`;
  if (typeof arg === 'object') {
    const proto = Object.getPrototypeOf(arg);
    if (proto === Object.prototype || proto === null) {
      const o = arg as Record<string, unknown>;
      return `{${Object.keys(o)
        .map((k) => `${quote(k)}: ${formatArgument(o[k])}`)
        .join(', ')}}`;
    }
    return `<${(arg as object).constructor?.name ?? 'object'}>`;
  }
  return String(arg);
}

/** A node's args as FX prints the tuple: `()`, `(x,)`, `(x, y)`. */
export function formatArgs(args: readonly Argument[]): string {
  if (args.length === 1) return `(${formatArgument(args[0])},)`;
  return `(${args.map(formatArgument).join(', ')})`;
}

/** The target column: the target, or `path.method` for a call_module node calling a method (`self.m` on the root). */
export function formatTarget(node: Node): string {
  if (node.op === 'call_module' && node.method) return `${node.target === '' ? 'self' : node.target}.${node.method}`;
  return node.target;
}

/** Columns padded to their widest cell and separated by two spaces, under a dashed rule (tabulate's "simple" format). */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The graph as torch.fx's `print_tabular` shows it: one row per node with opcode, name, target, args, kwargs. */
export function tabulateNodes(nodes: Iterable<Node>): string {
  const rows: string[][] = [];
  for (const n of nodes) rows.push([n.op, n.name, formatTarget(n), formatArgs(n.args), formatArgument(n.kwargs)]);
  return formatTable(['opcode', 'name', 'target', 'args', 'kwargs'], rows);
}
