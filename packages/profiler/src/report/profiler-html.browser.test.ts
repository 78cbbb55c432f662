// profiler.html seen as a person sees it: opened from disk in headless Chromium (Debian's `chromium`,
// driven by playwright-core), with no network. Skipped, saying why, when Chromium is not installed
// (pnpm test installs it; QTK_CHROMIUM points at another Chromium binary).
// QTK_DOCS_SCREENSHOT=1 (`pnpm --filter @qtk/profiler screenshot`) also writes docs/profiler-report.png.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeNeeding } from '../../../../scripts/needs-system.js';
import { CHROMIUM } from '../../../../scripts/system-requirements.js';
import { INJECTED_NAME, type SampleReport, sampleReport } from '../testing/sample-report.js';
import { writeProfilerReport } from '../node/write-report.js';

const DOCS_PNG = fileURLToPath(new URL('../../../../docs/profiler-report.png', import.meta.url));
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

describeNeeding('chromium', 'profiler.html in headless Chromium', () => {
  let dir: string;
  let sample: SampleReport;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];
  const dialogs: string[] = [];

  /** The text of column `key` of table `id`, top to bottom as displayed. */
  async function column(id: string, key: string): Promise<string[]> {
    const table = sample.report.tables.find((t) => t.id === id)!;
    const c = table.columns.findIndex((col) => col.key === key);
    return page.locator(`#qtk-table-${id} tbody tr td:nth-child(${c + 1})`).allTextContents();
  }
  const header = (id: string, label: string) =>
    page.locator(`#qtk-table-${id} thead th button`).filter({ hasText: new RegExp(`^${label}`) });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'qtk-report-'));
    sample = sampleReport();
    const written = await writeProfilerReport(dir, sample.report, sample.toolResults);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, deviceScaleFactor: 1 });
    // the page must open offline: any request that is not the file itself is a failure
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file:')) return route.continue();
      problems.push(`network request: ${url}`);
      return route.abort();
    });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await page.goto(pathToFileURL(written.html).href);
    await page.waitForSelector('html[data-qtk-ready]');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('draws the whole page without a console error, page error or network request', async () => {
    expect(await page.getAttribute('html', 'data-qtk-ready')).toBe('true');
    expect(problems).toEqual([]);
    expect(await page.locator('ul.summary li').count()).toBe(sample.report.summary.length);
  });

  it('shows every table with one row per report row', async () => {
    const tables = sample.report.tables;
    expect(tables.length).toBeGreaterThanOrEqual(8);
    expect(await page.locator('table').count()).toBe(tables.length);
    for (const t of tables) {
      expect(await page.locator(`#qtk-table-${t.id} tbody tr`).count(), t.id).toBe(t.rows.length);
      expect(await page.locator(`#qtk-table-${t.id} thead th`).count(), t.id).toBe(t.columns.length);
    }
    // flagged similarity rows are highlighted
    const flagged = sample.report.tables.find((t) => t.id === 'similarity')!.rows.filter((r) => r.flagged).length;
    expect(flagged).toBeGreaterThan(0);
    expect(await page.locator('#qtk-table-similarity tbody tr.flagged').count()).toBe(flagged);
  });

  it('draws the similarity plot and one histogram per worst node on non-blank canvases', async () => {
    const charts = (await page.evaluate(`Array.from(document.querySelectorAll('canvas')).map((c) => {
      const chart = Chart.getChart(c);
      const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let painted = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++;
      return { type: chart ? chart.config.type : null, points: chart ? chart.data.labels.length : 0,
        datasets: chart ? chart.data.datasets.map((d) => d.label) : [], painted, pixels: c.width * c.height };
    })`)) as { type: string | null; points: number; datasets: string[]; painted: number; pixels: number }[];
    const sim = sample.report.similarity!;
    expect(charts).toHaveLength(1 + sample.report.histograms.length);
    expect(charts[0]!.type).toBe('line');
    expect(charts[0]!.points).toBe(sim.points.length);
    expect(charts[0]!.datasets).toEqual([
      'cosine',
      'cosine (same input: error the node adds)',
      'flagged',
      `threshold ${sim.threshold}`,
      'max diff (quantization steps)',
    ]);
    for (const [i, c] of charts.entries()) {
      if (i > 0) expect(c.type).toBe('bar');
      // axes, labels and data: well over 2 % of the canvas is drawn
      expect(c.painted / c.pixels, `chart ${i}`).toBeGreaterThan(0.02);
    }
    // bins outside the range the node's scale represents are drawn red: relu0's tiny scale clips most bins
    const colors = (await page.evaluate(
      `Array.from(document.querySelectorAll('.histograms canvas')).map((c) => Chart.getChart(c).data.datasets[0].backgroundColor)`,
    )) as string[][];
    sample.report.histograms.forEach((h, i) => {
      const clipped = h.counts.map((_, b) => !!h.clip && (h.edges[b + 1]! <= h.clip.min || h.edges[b]! >= h.clip.max));
      expect(
        colors[i]!.map((c) => c === '#c0392b'),
        h.node,
      ).toEqual(clipped);
    });
    const relu0 = sample.report.histograms.findIndex((h) => h.node === 'relu0');
    expect(colors[relu0]!.filter((c) => c === '#c0392b').length).toBeGreaterThan(30);
  });

  it('draws a report with nothing in it but a title without errors', async () => {
    const out = join(dir, 'empty');
    const written = await writeProfilerReport(
      out,
      { version: 1, title: 'nothing', meta: {}, summary: [], tables: [], histograms: [] },
      {},
    );
    const empty = await page.context().newPage();
    const seen: string[] = [];
    empty.on('console', (m) => seen.push(`${m.type()}: ${m.text()}`));
    empty.on('pageerror', (e) => seen.push(e.message));
    await empty.goto(pathToFileURL(written.html).href);
    await empty.waitForSelector('html[data-qtk-ready]');
    expect(await empty.getAttribute('html', 'data-qtk-ready')).toBe('true');
    expect(await empty.locator('h1').textContent()).toBe('nothing');
    expect(await empty.locator('section').count()).toBe(0);
    expect(seen).toEqual([]);
    await empty.close();
  });

  it('opens a table in its requested order, and sorts by a clicked column, numbers numerically, null last', async () => {
    const stats = sample.report.tables.find((t) => t.id === 'statistics')!;
    const saturation = (await column('statistics', 'saturation')).map((s) => (s === '—' ? null : Number.parseFloat(s)));
    const known = saturation.filter((v): v is number => v !== null);
    expect(known).toEqual([...known].sort((a, b) => b - a));
    expect(saturation.slice(known.length).every((v) => v === null)).toBe(true);
    expect(known.length).toBeLessThan(stats.rows.length);
    // relu0's tiny scale clips every positive value it outputs
    expect((await column('statistics', 'name'))[0]).toBe('relu0');
    expect(known[0]).toBeGreaterThan(40);

    const sim = sample.report.tables.find((t) => t.id === 'similarity')!;
    const names = sim.rows.map((r) => r.name as string);
    // stable: equal cosines keep execution order both ways
    const sorted = (sign: number) =>
      [...sim.rows].sort((a, b) => sign * ((a.cosine as number) - (b.cosine as number))).map((r) => r.name);
    expect(await column('similarity', 'name')).toEqual(names);
    await header('similarity', 'cosine').first().click();
    expect(await column('similarity', 'name')).toEqual(sorted(1));
    expect(await page.getAttribute('#qtk-table-similarity th[data-key="cosine"]', 'aria-sort')).toBe('ascending');
    await header('similarity', 'cosine').first().click();
    expect(await column('similarity', 'name')).toEqual(sorted(-1));
    expect(await page.getAttribute('#qtk-table-similarity th[data-key="cosine"]', 'aria-sort')).toBe('descending');
    // numerically: 12 after 3 (as text '12' would come first)
    await header('shared', 'calls').click();
    expect(await column('shared', 'calls')).toEqual(['2', '3', '12']);
    await header('shared', 'calls').click();
    expect(await column('shared', 'calls')).toEqual(['12', '3', '2']);

    // the weight table's cosine has a null: last both ways
    await header('weights', 'cosine').click();
    const up = await column('weights', 'cosine');
    expect(up).toEqual(['0.99989', '0.99991', '0.99993', '0.99996', '—']);
    await header('weights', 'cosine').click();
    expect(await column('weights', 'cosine')).toEqual(['0.99996', '0.99993', '0.99991', '0.99989', '—']);
    expect(problems).toEqual([]);
  });

  it('shows a node name that is markup as text: no element, no script, no dialog', async () => {
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(3);
    expect(await column('shared', 'module')).toContain(INJECTED_NAME);
    expect(await column('deploy-device', 'name')).toContain(INJECTED_NAME);
    expect(await column('weights', 'name')).toContain(`${INJECTED_NAME}.weight`);
    expect(await page.title()).toBe(sample.report.title);
    expect(await page.locator('h1').textContent()).toBe(sample.report.title);
    expect(dialogs).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('saves a screenshot (and docs/profiler-report.png with QTK_DOCS_SCREENSHOT=1)', async () => {
    await page.evaluate('window.scrollTo(0, 0)');
    const path = join(dir, 'profiler.png');
    await page.screenshot({ path });
    const png = readFileSync(path);
    expect([...png.subarray(0, 8)]).toEqual(PNG_SIGNATURE);
    expect(png.readUInt32BE(16)).toBe(1200);
    expect(png.readUInt32BE(20)).toBe(900);
    if (process.env.QTK_DOCS_SCREENSHOT) {
      await page.screenshot({ path: DOCS_PNG });
      expect(statSync(DOCS_PNG).size).toBeLessThan(200 * 1024);
    }
  });
});
