// What `qtk quantize` (and the commands sharing its conversion) says when a march cannot convert some
// nodes: the nodes and why, then what to do in the CLI's own terms (--hybrid, --keep-float, --march).
import type { ConversionError } from '@qtk/core';
import type { GraphModule } from '@qtk/ir';
import { marches } from '@qtk/spec';

const LISTED = 20;

/** The CLI's message for a ConversionError of nodes the march cannot convert (not the uncalibrated one). */
export function conversionAdvice(
  e: ConversionError,
  modelPath: string,
  march: string,
  hybrid: boolean,
  prepared: GraphModule,
): string {
  const lines = e.failures.slice(0, LISTED).map((f) => `  - ${f.node}: ${f.op}${f.reason ? ` (${f.reason})` : ''}`);
  if (e.failures.length > LISTED) lines.push(`  ... and ${e.failures.length - LISTED} more`);
  const head = `cannot quantize ${modelPath} for '${march}': march '${march}' cannot convert ${e.failures.length} node(s):\n${lines.join('\n')}\n`;
  const modules = new Set(prepared.graph.nodes.filter((n) => n.op === 'call_module').map((n) => n.target));
  const names = [...new Set(e.failures.map((f) => f.node).filter((n) => modules.has(n)))];
  const others = marches.names().filter((m) => m !== march);
  const keep = names.length ? `, keep modules float with --keep-float ${names.slice(0, LISTED).join(',')}` : '';
  const another = others.length ? `, or choose another march (--march ${others.join(' | ')})` : '';
  if (hybrid)
    return (
      `${head}with --hybrid these should have run on the CPU; put them there by name with --cpu-nodes ` +
      `${e.failures.map((f) => f.node).join(',')}${another}`
    );
  return `${head}rerun with --hybrid to run these nodes on the CPU (a heterogeneous model)${keep}${another}`;
}
