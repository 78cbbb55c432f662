// The result of a job: the accuracy summary, the downloads, the per-node chart and the device table.
import type { QuantizeJobResult } from '../job/quantize-job.js';
import { h } from './dom.js';
import { pct } from './pct.js';
import { similarityChart } from './similarity-chart.js';

function download(name: string, bytes: Uint8Array, type: string): HTMLAnchorElement {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  return h(
    'a',
    { href: url, download: name, class: 'button', 'data-testid': `download-${name.split('.').pop()}` },
    `${name} (${(bytes.length / 1024).toFixed(1)} KB)`,
  );
}

function summary(r: QuantizeJobResult): HTMLTableElement {
  const row = (label: string, value: string, id: string) =>
    h('tr', {}, h('th', {}, label), h('td', { 'data-testid': id }, value));
  return h(
    'table',
    { class: 'summary' },
    r.accuracy
      ? row(`Float accuracy (${r.accuracy.samples} labelled samples)`, pct(r.accuracy.float), 'float-accuracy')
      : null,
    r.accuracy ? row(`Fixed-point accuracy (${r.march})`, pct(r.accuracy.fixedPoint), 'fixed-accuracy') : null,
    r.agreement !== null ? row('Top-1 agreement, fixed point vs float', pct(r.agreement), 'agreement') : null,
    r.accuracy ? null : row('Accuracy', 'no labels given (add a labels.txt)', 'no-labels'),
    row('Calibration', `${r.calibrationSamples} samples, ${r.observer} observer`, 'calibration'),
    row(
      'Calibrate and convert',
      `${r.seconds.quantize.toFixed(2)} s (whole job ${r.seconds.total.toFixed(2)} s)`,
      'quantize-seconds',
    ),
    row('Devices', `${r.deviceCounts.BPU} ops on the BPU, ${r.deviceCounts.CPU} on the CPU`, 'device-counts'),
  );
}

function deviceTable(r: QuantizeJobResult): HTMLTableElement {
  return h(
    'table',
    { class: 'devices', 'data-testid': 'device-table' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Node'), h('th', {}, 'Type'), h('th', {}, 'Device'), h('th', {}, 'Why'))),
    h(
      'tbody',
      {},
      ...r.devices.map((d) =>
        h(
          'tr',
          { class: d.device === 'CPU' ? 'cpu' : '' },
          h('td', {}, d.name),
          h('td', {}, d.type),
          h('td', {}, d.device),
          h('td', {}, d.reason),
        ),
      ),
    ),
  );
}

export function renderResult(r: QuantizeJobResult): HTMLElement {
  const stem = r.modelName.replace(/\.onnx$/i, '');
  return h(
    'section',
    { class: 'result', 'data-testid': 'result' },
    h('h2', {}, `Result: ${r.modelName} for ${r.march}`),
    summary(r),
    h(
      'p',
      { class: 'downloads' },
      download(`${stem}-${r.march}.qtk`, r.modelFile, 'application/octet-stream'),
      ' ',
      download(`${stem}-${r.march}.onnx`, r.fixedOnnx, 'application/octet-stream'),
    ),
    r.warnings.length
      ? h(
          'details',
          {},
          h('summary', {}, `${r.warnings.length} warning(s)`),
          h('ul', {}, ...r.warnings.map((w) => h('li', {}, w))),
        )
      : null,
    h('h3', {}, 'Per-node similarity, fixed point vs fake quant (cosine)'),
    h(
      'p',
      { class: 'hint' },
      `Bars: each node's output compared on ${r.similarity.length ? 'the first samples' : 'no samples'}; ticks: the node fed the fake-quant model's inputs, the error it adds itself. `,
      r.flagged.length ? `Below the threshold: ${r.flagged.join(', ')}.` : 'No node below the threshold.',
    ),
    h('div', { class: 'chart' }, similarityChart(r.similarity, r.flagged)),
    h('h3', {}, 'Where each operator runs'),
    deviceTable(r),
  );
}
