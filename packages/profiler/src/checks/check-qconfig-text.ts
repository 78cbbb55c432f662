// checkQconfig's result as the plain text file horizon_plugin_pytorch's check_qconfig writes (qconfig_info.txt):
// one row per node with its dtypes and fake-quants, the int16 and int32 outputs, then the warnings.
import type { CheckQconfigResult, FakeQuantSummary } from './check-qconfig.js';

function fakeQuantText(f: FakeQuantSummary | null): string {
  if (!f) return '-';
  const axis = f.perChannel ? `per channel (axis ${f.chAxis})` : 'per tensor';
  const fixed = f.fixedScale ? `, fixed scale ${f.fixedScale.join(', ')}` : '';
  return `${f.dtype} ${f.observer} ${axis}${fixed}${f.learnable ? ', learnable' : ''}`;
}

/** Columns padded to their widest cell, two spaces apart. */
function aligned(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) =>
    r
      .map((cell, c) => cell.padEnd(widths[c]!))
      .join('  ')
      .trimEnd(),
  );
}

/** The result as text: the table of nodes, the high-precision outputs, the warnings. */
export function formatQconfigInfo(result: CheckQconfigResult): string {
  const header = ['node', 'type', 'device', 'input dtypes', 'output dtype', 'activation', 'weight'];
  const rows = result.nodes.map((n) => [
    n.name,
    n.type,
    n.device ?? '-',
    n.inputDtypes.join(', ') || '-',
    n.outputDtype,
    fakeQuantText(n.activation),
    fakeQuantText(n.weight),
  ]);
  const list = (names: readonly string[]) => (names.length ? names.join(', ') : 'none');
  return [
    `march: ${result.march ?? 'none given'}`,
    '',
    ...aligned([header, ...rows]),
    '',
    `int16 outputs: ${list(result.int16Outputs)}`,
    `int32 (high-precision) outputs: ${list(result.int32Outputs)}`,
    '',
    `${result.warnings.length} warning(s)${result.warnings.length ? ':' : ''}`,
    ...result.warnings.map((w) => `  ${w.node} [${w.code}]: ${w.message}`),
    '',
  ].join('\n');
}
