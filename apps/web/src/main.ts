// The page: choose the demo or your own files, the march, the observer and hybrid; the job runs in a
// Web Worker (src/worker.ts) and the result is drawn when it ends.
import type { FromWorker, JobOptions, JobSource, ToWorker } from './job/messages.js';
import { DEFAULT_JOB_OPTIONS } from './job/defaults.js';
import { JOB_STAGES } from './job/stages.js';
import { h } from './ui/dom.js';
import { type PickedFiles, readSamples, sortFiles } from './ui/read-files.js';
import { renderResult } from './ui/results.js';
import './style.css';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module', name: 'qtk-quantize' });
let picked: PickedFiles = { model: null, samples: [], labels: null };
let running = false;

function setStatus(text: string, kind: 'info' | 'error' = 'info'): void {
  const el = $('status');
  el.textContent = text;
  el.className = kind;
}

function showPicked(): void {
  const p = picked;
  $('picked').replaceChildren(
    h('li', {}, `Model: ${p.model ? p.model.name : 'none yet (.onnx)'}`),
    h('li', {}, `Samples: ${p.samples.length} file(s)${p.samples.length ? ` (${p.samples[0]!.name} …)` : ''}`),
    h(
      'li',
      {},
      `Labels: ${p.labels ? p.labels.name : 'none (accuracy needs a labels.txt, one class per line in file-name order)'}`,
    ),
  );
  $<HTMLInputElement>('source-files').checked = true;
}

function addFiles(files: FileList | null): void {
  if (!files) return;
  picked = sortFiles(files, picked);
  showPicked();
}

const STAGE_LABELS: Record<string, string> = {
  load: 'loading the demo files',
  ...Object.fromEntries(JOB_STAGES.map((s) => [s, s])),
};

function onProgress(stage: string, done: number, total: number): void {
  const bar = $<HTMLProgressElement>('progress');
  const index = stage === 'load' ? 0 : JOB_STAGES.indexOf(stage as (typeof JOB_STAGES)[number]) + 1;
  const stages = JOB_STAGES.length + 1;
  bar.max = 1;
  bar.value = (index + (total ? done / total : 0)) / stages;
  $('stage').textContent = `${STAGE_LABELS[stage] ?? stage} ${total > 1 ? `${done} / ${total}` : ''}`;
}

async function sourceOf(): Promise<JobSource> {
  if ($<HTMLInputElement>('source-demo').checked) return { kind: 'demo' };
  if (!picked.model) throw new Error('choose an ONNX model (.onnx), or use the demo');
  if (!picked.samples.length) throw new Error('add calibration samples: PNG, JPEG or .npy files');
  const numbers = (id: string) =>
    $<HTMLInputElement>(id)
      .value.split(',')
      .map((v) => Number(v.trim()));
  const mean = numbers('mean');
  const std = numbers('std');
  if (mean.some((v) => !Number.isFinite(v)) || std.some((v) => !Number.isFinite(v) || v === 0))
    throw new Error('mean and std must be numbers (std not 0), one or one per channel');
  return {
    kind: 'files',
    modelName: picked.model.name,
    onnx: new Uint8Array(await picked.model.arrayBuffer()),
    samples: await readSamples(picked.samples),
    labels: picked.labels ? await picked.labels.text() : null,
    normalisation: { mean, std },
  };
}

function optionsOf(): JobOptions {
  const scale = $<HTMLInputElement>('input-scale').value.trim();
  const m = /^1\s*\/\s*(\d+(?:\.\d+)?)$/.exec(scale);
  const inputScale = m ? 1 / Number(m[1]) : Number(scale);
  if (!(inputScale > 0 && Number.isFinite(inputScale)))
    throw new Error(`input scale '${scale}' must be a positive number such as 1/128`);
  return {
    march: $<HTMLSelectElement>('march').value,
    observer: $<HTMLSelectElement>('observer').value,
    hybrid: $<HTMLInputElement>('hybrid').checked,
    inputScale,
  };
}

async function run(): Promise<void> {
  if (running) return;
  let message: ToWorker;
  try {
    message = { type: 'run', source: await sourceOf(), options: optionsOf() };
  } catch (e) {
    setStatus((e as Error).message, 'error');
    return;
  }
  running = true;
  $<HTMLButtonElement>('run').disabled = true;
  $('result').replaceChildren();
  setStatus('quantizing…');
  worker.postMessage(message);
}

function fillSelect(id: string, values: string[], preferred: string): void {
  const select = $<HTMLSelectElement>(id);
  select.replaceChildren(...values.map((v) => h('option', { value: v }, v)));
  if (values.includes(preferred)) select.value = preferred;
}

worker.onmessage = (event: MessageEvent<FromWorker>) => {
  const m = event.data;
  if (m.type === 'ready') {
    fillSelect('march', m.marches, DEFAULT_JOB_OPTIONS.march);
    fillSelect('observer', m.observers, DEFAULT_JOB_OPTIONS.observer);
    const w = m.wasm;
    $('engine').textContent = w.loaded
      ? `wasm kernels${w.relaxedSimd ? ' with relaxed SIMD' : ''}, ${w.threads ?? 1} thread${w.threads === 2 ? 's' : ''}${w.threads === 2 ? '' : ` (${w.threadsReason ?? ''})`}`
      : `JavaScript kernels (${w.reason})`;
    $<HTMLButtonElement>('run').disabled = false;
    document.documentElement.dataset.ready = 'true';
    setStatus('ready');
    return;
  }
  if (m.type === 'progress') {
    onProgress(m.progress.stage, m.progress.done, m.progress.total);
    return;
  }
  running = false;
  $<HTMLButtonElement>('run').disabled = false;
  if (m.type === 'error') {
    setStatus(m.userError ? m.message : `internal error (please report it): ${m.message}`, 'error');
    return;
  }
  onProgress('export', 1, 1);
  $('result').replaceChildren(renderResult(m.result));
  setStatus(`done in ${m.result.seconds.total.toFixed(1)} s`);
};
worker.onerror = (e) => setStatus(`the worker failed: ${e.message}`, 'error');

$<HTMLInputElement>('files').addEventListener('change', (e) => addFiles((e.target as HTMLInputElement).files));
$('run').addEventListener('click', () => void run());
const drop = $('drop');
drop.addEventListener('dragover', (e) => {
  e.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  addFiles(e.dataTransfer?.files ?? null);
});
showPicked();
$<HTMLInputElement>('source-demo').checked = true;
// the built app caches itself for offline use (offline-plugin.ts); the dev server does not
if (import.meta.env.PROD && 'serviceWorker' in navigator) {
  navigator.serviceWorker
    .register('./sw.js')
    .catch((e: Error) => setStatus(`offline use is unavailable: ${e.message}`, 'error'));
}
