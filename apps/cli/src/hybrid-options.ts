// --hybrid, --cpu-ops and --cpu-nodes: the CLI's way to a heterogeneous (CPU/BPU) model.
import type { HybridDict } from '@qtk/core';
import { type DeployDeviceReport, formatDeployDevice } from '@qtk/hybrid';
import type { GraphModule } from '@qtk/ir';
import { opOfNode } from '@qtk/spec';
import { CliError } from './io.js';
import type { ModelNames } from './model-names.js';

export function splitNames(value: unknown): string[] {
  if (value === undefined) return [];
  return String(value)
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
}

/**
 * The hybridDict of --cpu-ops (catalog op names as `qtk inspect` prints them, e.g. Conv, HardSwish;
 * every module of the model running that op) and --cpu-nodes (module names).
 */
export function hybridDictFrom(gm: GraphModule, cpuOps: readonly string[], cpuNodes: readonly string[]): HybridDict {
  const modulesByOp = new Map<string, Set<string>>();
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module') continue;
    const op = opOfNode(gm, node)?.op;
    if (op === undefined) continue;
    const set = modulesByOp.get(op.toLowerCase()) ?? new Set<string>();
    set.add(node.target);
    modulesByOp.set(op.toLowerCase(), set);
  }
  const names = new Set(cpuNodes);
  for (const op of cpuOps) {
    const found = modulesByOp.get(op.toLowerCase());
    if (!found)
      throw new CliError(
        `--cpu-ops: the model has no '${op}' operator; its operators are: ${[
          ...new Set(
            gm.graph.nodes.flatMap((n) => (n.op === 'call_module' ? [opOfNode(gm, n)?.op ?? ''] : [])).filter(Boolean),
          ),
        ]
          .sort()
          .join(', ')}`,
        { exitCode: 2 },
      );
    for (const name of found) names.add(name);
  }
  return names.size ? { moduleName: [...names] } : {};
}

/**
 * The device summary lines: counts, transitions, segments and the CPU ops with their reasons (and their
 * names in the ONNX file, `names`, where those add something).
 */
export function deviceSummary(report: DeployDeviceReport, names?: ModelNames): string {
  const cpu = report.nodes.filter((n) => n.device === 'CPU');
  const source = (name: string) => {
    const shown = names?.addsNames ? names.sourceOf(name) : '';
    return shown && shown !== name ? ` [${shown}]` : '';
  };
  const lines = [
    `devices:      ${report.counts.BPU} BPU, ${report.counts.CPU} CPU; ${report.transitions} CPU<->BPU transition(s); ${report.segments.length} segment(s)`,
    ...cpu.map((n) => `  CPU ${n.name}${source(n.name)} (${n.type}): ${n.reason}${n.detail ? `: ${n.detail}` : ''}`),
  ];
  return lines.join('\n');
}

export { formatDeployDevice };
