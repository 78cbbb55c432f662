import { QatModule } from '@qtk/core';
import { FakeQuantize } from '@qtk/fake-quant';
import { FusedConvBase } from '@qtk/fusion';
import type { GraphModule } from '@qtk/ir';
import type { Module } from '@qtk/nn';
import { formatTable } from './summary.js';

/** One fake-quant as the report shows it. */
export interface FakeQuantInfo {
  kind: string;
  observer: string;
  dtype: string;
  /** 'per-tensor' or 'per-channel (axis k)'. */
  granularity: string;
  /** Smallest and largest scale (one per channel). */
  scale: [number, number];
}

/** A module of the prepared graph and the fake-quants its qconfig gave it. */
export interface QconfigRow {
  /** Graph node and module path. */
  node: string;
  module: string;
  /** Module type (the wrapped float/fused type for QAT modules). */
  type: string;
  /** Fake-quant of the weight (null: none), of the output (null: none, e.g. an "out" qconfig keeping int32). */
  weight: FakeQuantInfo | null;
  activation: FakeQuantInfo | null;
}

function typeName(m: Module): string {
  if (!(m instanceof FusedConvBase)) return m.constructor.name;
  return `${m.conv.constructor.name}${m.withAdd ? '+add' : ''}${m.activation ? `+${m.activation}` : ''} (fused)`;
}

function info(fq: Module | null | undefined): FakeQuantInfo | null {
  if (!(fq instanceof FakeQuantize)) return null;
  const s = fq.scale.values();
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of s) {
    lo = Math.min(lo, v);
    hi = Math.max(hi, v);
  }
  const ax = fq.options.chAxis;
  return {
    kind: fq.kind,
    observer: fq.options.observer,
    dtype: fq.dtype,
    granularity: ax >= 0 ? `per-channel (axis ${ax})` : 'per-tensor',
    scale: [lo, hi],
  };
}

/** Which qconfig, observer and dtype each module of a prepared (calibration or QAT) model got, in graph order. */
export function qconfigReport(gm: GraphModule): QconfigRow[] {
  const rows: QconfigRow[] = [];
  for (const node of gm.graph.nodes) {
    if (node.op !== 'call_module') continue;
    const target = String(node.target);
    const m = gm.getSubmodule(target);
    if (m instanceof QatModule) {
      rows.push({
        node: node.name,
        module: target,
        type: typeName(m.module),
        weight: info(m.weightFakeQuant),
        activation: info(m.activationPostProcess),
      });
    } else if (m instanceof FakeQuantize) {
      const src = node.args[0] as { name?: string } | undefined;
      rows.push({
        node: node.name,
        module: target,
        type: `output of ${src?.name ?? '?'}`,
        weight: null,
        activation: info(m),
      });
    } else {
      // QuantStubs and other modules carrying their own fake-quant (or none: float or value-preserving)
      const fqs = m.namedModules().filter(([, c]) => c instanceof FakeQuantize);
      rows.push({
        node: node.name,
        module: target,
        type: m.constructor.name,
        weight: null,
        activation: info(fqs[0]?.[1]),
      });
    }
  }
  return rows;
}

function cell(f: FakeQuantInfo | null): string {
  if (!f) return '—';
  const [lo, hi] = f.scale;
  const sc = lo === hi ? lo.toExponential(3) : `${lo.toExponential(2)}..${hi.toExponential(2)}`;
  return `${f.kind}/${f.observer} ${f.dtype} ${f.granularity} s=${sc}`;
}

/** The report as a readable text table. */
export function formatQconfigReport(title: string, rows: QconfigRow[]): string {
  const table = [
    ['node', 'module', 'type', 'weight fake-quant', 'output fake-quant'],
    ...rows.map((r) => [r.node, r.module, r.type, cell(r.weight), cell(r.activation)]),
  ];
  return `${title}\n\n${formatTable(table)}\n`;
}
