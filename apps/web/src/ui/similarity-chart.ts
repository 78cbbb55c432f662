// The profiler's per-node comparison as a bar chart: one bar per node, its cosine similarity between the
// fake-quant and the fixed-point model, with the node fed the fake-quant model's inputs as a tick (the
// error the node adds itself). Bars below the profiler's threshold are drawn in the warning colour.
import type { SimilarityRow } from '../job/quantize-job.js';

const SVG = 'http://www.w3.org/2000/svg';

function el(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The y axis: from a little below the lowest cosine to 1, so differences near 1 stay visible. */
function axisOf(rows: readonly SimilarityRow[]): { floor: number; digits: number } {
  const values = rows.flatMap((r) => [r.cosine, r.sameInputCosine]).filter((v): v is number => v !== null);
  const low = Math.min(1, ...values);
  const span = Math.min(1, Math.max(1 - low, 1e-6) * 1.25);
  return { floor: 1 - span, digits: Math.min(8, Math.ceil(-Math.log10(span)) + 1) };
}

export function similarityChart(rows: readonly SimilarityRow[], flagged: readonly string[]): SVGSVGElement {
  const barW = Math.max(8, Math.min(28, Math.floor(760 / Math.max(rows.length, 1))));
  const left = 78;
  const top = 12;
  const plotH = 180;
  const width = left + rows.length * barW + 12;
  const labelsH = 110;
  const svg = el('svg', {
    width,
    height: top + plotH + labelsH,
    role: 'img',
    'data-testid': 'similarity-chart',
  }) as SVGSVGElement;
  svg.append(el('title', {}, 'Cosine similarity of each node, fixed point vs fake quant'));
  const { floor, digits } = axisOf(rows);
  const y = (v: number) => top + plotH * (1 - (Math.max(v, floor) - floor) / (1 - floor));
  for (const t of [floor, (floor + 1) / 2, 1]) {
    svg.append(el('line', { x1: left, x2: width - 8, y1: y(t), y2: y(t), class: 'grid' }));
    svg.append(el('text', { x: left - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'axis' }, t.toFixed(digits)));
  }
  const bad = new Set(flagged);
  rows.forEach((r, i) => {
    const x = left + i * barW;
    const v = r.cosine ?? floor;
    const bar = el('rect', {
      x: x + 1,
      y: y(v),
      width: barW - 2,
      height: top + plotH - y(v),
      class: bad.has(r.name) ? 'bar flagged' : 'bar',
      'data-node': r.name,
      'data-cosine': r.cosine === null ? '' : r.cosine.toFixed(6),
    });
    bar.append(
      el(
        'title',
        {},
        `${r.name} (${r.type}): cosine ${r.cosine?.toFixed(6) ?? '-'}; fed the fake-quant inputs ${r.sameInputCosine?.toFixed(6) ?? '-'}`,
      ),
    );
    svg.append(bar);
    if (r.sameInputCosine !== null) {
      svg.append(
        el('line', {
          x1: x + 1,
          x2: x + barW - 1,
          y1: y(r.sameInputCosine),
          y2: y(r.sameInputCosine),
          class: 'same-input',
        }),
      );
    }
    const lx = x + barW / 2;
    const ly = top + plotH + 8;
    svg.append(
      el(
        'text',
        { x: lx, y: ly, transform: `rotate(60 ${lx} ${ly})`, class: 'node-label' },
        r.name.length > 18 ? `${r.name.slice(0, 17)}…` : r.name,
      ),
    );
  });
  return svg;
}
