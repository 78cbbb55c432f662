// `pnpm test:e2e`: the web app as a person uses it, in Debian's Chromium (driven by playwright-core). The
// app is built with Vite and served cross-origin isolated by Vite's preview server; the page quantizes the
// embedded demo model after a reload with the network switched off (its service worker serves it); the accuracies it shows must equal
// the same job run here in Node, and the ONNX file and model file it downloads must equal Node's byte for
// byte. A screenshot goes to runs/e2e/web-app.png (QTK_DOCS_SCREENSHOT=1 also writes docs/web-app.png).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build, type PreviewServer, preview } from 'vite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../../../scripts/needs-system.js';
import { CHROMIUM } from '../../../scripts/system-requirements.js';
import { PNG } from 'pngjs';
import { type QuantizeJobResult, runQuantizeJob } from '../src/job/quantize-job.js';
import { parseLabels, samplesFromFiles } from '../src/job/user-inputs.js';
import { defaultDemoJob, demoInputsFromDisk, demoTestPixels } from '../testing/demo-from-disk.js';
import { pct } from '../src/ui/pct.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const REPO = join(ROOT, '..', '..');
const OUT = join(REPO, 'runs', 'e2e');

/** The demo job as the page runs it by default. */
async function nodeResult(): Promise<{ result: QuantizeJobResult; seconds: number }> {
  const job = await defaultDemoJob();
  const t0 = performance.now();
  const result = runQuantizeJob(job);
  return { result, seconds: (performance.now() - t0) / 1000 };
}

describeNeeding('chromium', 'the web app in headless Chromium', () => {
  let server: PreviewServer;
  let browser: Browser;
  let page: Page;
  let node: { result: QuantizeJobResult; seconds: number };
  const problems: string[] = [];
  const failedRequests: string[] = [];

  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    // a production build, as `vite build` makes it (vitest sets NODE_ENV=test, which Vite would follow)
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await build({ root: ROOT, mode: 'production', logLevel: 'warn', configFile: join(ROOT, 'vite.config.ts') });
    } finally {
      process.env.NODE_ENV = nodeEnv;
    }
    server = await preview({
      root: ROOT,
      configFile: join(ROOT, 'vite.config.ts'),
      preview: { port: 0, host: '127.0.0.1' },
      logLevel: 'warn',
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const url = server.resolvedUrls!.local[0]!;
    await page.goto(url);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 60_000 });
    // once loaded, the app works offline: its service worker has cached every file, so a reload with the
    // network off still opens it, and the job needs nothing more
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
    await context.setOffline(true);
    page.on('requestfailed', (r) => failedRequests.push(`${r.url()}: ${r.failure()?.errorText}`));
    await page.reload();
    await page.waitForSelector('html[data-ready="true"]', { timeout: 60_000 });
    node = await nodeResult();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('reloads offline from its service worker, cross-origin isolated, with the wasm kernels on two threads', async () => {
    expect(await page.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    expect(await page.getByTestId('engine').textContent()).toMatch(/^wasm kernels with relaxed SIMD, 2 threads$/);
    expect(await page.getByTestId('march').inputValue()).toBe('bayes');
    expect(await page.getByTestId('observer').inputValue()).toBe('mse');
  });

  it('quantizes the demo offline and shows the accuracies Node computes for the same inputs', async () => {
    await page.getByTestId('run').click();
    await page.getByTestId('result').waitFor({ timeout: 180_000 });
    const text = async (id: string) => (await page.getByTestId(id).textContent())?.trim();
    const r = node.result;
    expect(r.accuracy!.samples).toBe(2000);
    expect(await text('float-accuracy')).toBe(pct(r.accuracy!.float));
    expect(await text('fixed-accuracy')).toBe(pct(r.accuracy!.fixedPoint));
    expect(await text('agreement')).toBe(pct(r.agreement!));
    // the reference network keeps its accuracy through conversion
    expect(r.accuracy!.float).toBeGreaterThan(0.9);
    expect(r.accuracy!.fixedPoint).toBeGreaterThan(0.9);

    // every node of the chart, with Node's cosine
    const bars = page.locator('[data-testid="similarity-chart"] rect.bar');
    expect(await bars.count()).toBe(r.similarity.length);
    const shown = await bars.evaluateAll((els) =>
      els.map((e) => [e.getAttribute('data-node'), e.getAttribute('data-cosine')]),
    );
    expect(shown).toEqual(r.similarity.map((s) => [s.name, s.cosine === null ? '' : s.cosine.toFixed(6)]));
    expect(await page.locator('[data-testid="device-table"] tbody tr').count()).toBe(r.devices.length);

    const browserSeconds = Number(/([\d.]+) s/.exec((await text('quantize-seconds')) ?? '')?.[1]);
    const line = `demo calibrate + convert (mse, bayes, 1,024 images): Chromium ${browserSeconds.toFixed(2)} s, Node ${r.seconds.quantize.toFixed(2)} s`;
    writeFileSync(join(OUT, 'timing.txt'), `${line}\n`);
    console.log(line);
    expect(failedRequests).toEqual([]);
    expect(problems).toEqual([]);
  }, 240_000);

  it('saves a screenshot of the demo result', async () => {
    const png = await page.screenshot({ fullPage: true });
    writeFileSync(join(OUT, 'web-app.png'), png);
    if (process.env.QTK_DOCS_SCREENSHOT === '1') {
      const docs = join(REPO, 'docs', 'web-app.png');
      mkdirSync(dirname(docs), { recursive: true });
      writeFileSync(docs, png);
    }
    expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });

  it('downloads the ONNX export and the model file, byte for byte what Node writes', async () => {
    for (const [id, bytes] of [
      ['download-onnx', node.result.fixedOnnx],
      ['download-qtk', node.result.modelFile],
    ] as const) {
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId(id).click()]);
      const path = join(OUT, download.suggestedFilename());
      await download.saveAs(path);
      const got = readFileSync(path);
      expect(got.length).toBe(bytes.length);
      expect(Buffer.compare(got, Buffer.from(bytes))).toBe(0);
    }
  });

  it("quantizes the user's files (picked, and a model dropped on the page) as Node does", async () => {
    // the demo model's float ONNX, the first 64 test images as greyscale PNGs, and their labels
    const demo = await demoInputsFromDisk();
    const n = 64;
    const pixels = await demoTestPixels(n);
    const pngs = Array.from({ length: n }, (_, i) => {
      const png = new PNG({ width: 28, height: 28, colorType: 0, inputColorType: 0, bitDepth: 8 });
      const rgba = new Uint8Array(28 * 28 * 4);
      for (let p = 0; p < 784; p++)
        rgba.set([pixels[i * 784 + p]!, pixels[i * 784 + p]!, pixels[i * 784 + p]!, 255], p * 4);
      png.data = Buffer.from(rgba);
      return { name: `img-${String(i).padStart(3, '0')}.png`, rgba, bytes: PNG.sync.write(png, { colorType: 0 }) };
    });
    const labelsText = `${Array.from(demo.test.labels.subarray(0, n)).join('\n')}\n`;

    const samples = samplesFromFiles(
      pngs.map((p) => ({ kind: 'image' as const, image: { name: p.name, width: 28, height: 28, data: p.rgba } })),
      [1, 28, 28],
      { mean: [0.5], std: [0.5] },
    );
    const want = runQuantizeJob({
      onnx: demo.onnx,
      modelName: 'fashion-net.onnx',
      calibration: samples,
      test: { images: samples, labels: parseLabels(labelsText, n) },
      march: 'bernoulli2',
      observer: 'min_max',
      hybrid: false,
      inputScale: 1 / 128,
      batch: 64,
      profileSamples: 32,
    });

    await page
      .locator('#files')
      .setInputFiles([
        ...pngs.map((p) => ({ name: p.name, mimeType: 'image/png', buffer: Buffer.from(p.bytes) })),
        { name: 'labels.txt', mimeType: 'text/plain', buffer: Buffer.from(labelsText) },
      ]);
    // the model arrives by drag and drop
    const onnx = Array.from(demo.onnx);
    await page.getByTestId('drop').evaluate((el, bytes) => {
      const transfer = new DataTransfer();
      transfer.items.add(new File([new Uint8Array(bytes)], 'fashion-net.onnx'));
      el.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
    }, onnx);
    expect(await page.locator('#picked').textContent()).toContain('Model: fashion-net.onnx');
    expect(await page.locator('#picked').textContent()).toContain(`Samples: ${n} file(s)`);
    await page.getByTestId('march').selectOption('bernoulli2');
    await page.getByTestId('observer').selectOption('min_max');
    await page.getByTestId('run').click();
    await page
      .locator('[data-testid="result"] h2', { hasText: 'fashion-net.onnx for bernoulli2' })
      .waitFor({ timeout: 120_000 });
    const text = async (id: string) => (await page.getByTestId(id).textContent())?.trim();
    expect(await text('float-accuracy')).toBe(pct(want.accuracy!.float));
    expect(await text('fixed-accuracy')).toBe(pct(want.accuracy!.fixedPoint));
    expect(await text('agreement')).toBe(pct(want.agreement!));
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-onnx').click()]);
    expect(download.suggestedFilename()).toBe('fashion-net-bernoulli2.onnx');
    const path = join(OUT, download.suggestedFilename());
    await download.saveAs(path);
    expect(Buffer.compare(readFileSync(path), Buffer.from(want.fixedOnnx))).toBe(0);
    expect(problems).toEqual([]);
  });

  it('says what is wrong with a file that is not ONNX, and keeps working', async () => {
    const png = new PNG({ width: 4, height: 4 });
    await page.locator('#files').setInputFiles([
      { name: 'broken.onnx', mimeType: 'application/octet-stream', buffer: Buffer.from('not a model at all') },
      { name: 'one.png', mimeType: 'image/png', buffer: PNG.sync.write(png) },
    ]);
    await page.getByTestId('run').click();
    await page.locator('#status.error').waitFor({ timeout: 60_000 });
    const status = (await page.getByTestId('status').textContent()) ?? '';
    expect(status).toMatch(/^importOnnx: 'broken\.onnx' is not a valid ONNX model \(/);
    expect(status).not.toMatch(/internal error/);
    expect(await page.getByTestId('run').isEnabled()).toBe(true);
  });
});
