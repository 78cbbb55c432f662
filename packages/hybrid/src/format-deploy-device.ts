import type { DeployDeviceReport } from './check-deploy-device.js';

/** The report as a text table (name, device, type, reason) with a summary line and any mismatches. */
export function formatDeployDevice(
  report: DeployDeviceReport,
  options: {
    /** A second column beside each node's name: its name in the source file (e.g. the ONNX node's). */
    readonly sourceName?: (name: string) => string;
  } = {},
): string {
  const { sourceName } = options;
  const rows = report.nodes.map((n) => [
    n.name,
    ...(sourceName ? [sourceName(n.name)] : []),
    n.device,
    n.type,
    n.device === 'CPU' ? n.reason + (n.detail ? `: ${n.detail}` : '') : '',
  ]);
  const header = ['name', ...(sourceName ? ['source name'] : []), 'device', 'type', 'reason'];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join('  ')
      .trimEnd();
  const out = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  out.push(
    `${report.nodes.length} ops: ${report.counts.BPU} BPU, ${report.counts.CPU} CPU; ` +
      `${report.transitions} CPU<->BPU transition(s); ${report.segments.length} segment(s)`,
  );
  for (const m of report.mismatches)
    out.push(`mismatch: ${m.name} expected ${m.expected}, runs on ${m.actual ?? '(no such op)'}`);
  return out.join('\n');
}
