// profiler.html: one self-contained file (style, Chart.js, the data and the page script inline) that
// opens offline from disk. Rendered as a string, in Node or in a browser; writeProfilerReport
// (@qtk/profiler/node) writes it to disk.
import { InvalidArgumentError } from '@qtk/tensor';
import { CHART_JS_UMD } from './chart-js-umd.js';
import { checkReport } from './check-report.js';
import { escapeHtml, jsonForScript } from './html-escape.js';
import { PAGE_SCRIPT } from './page-script.js';
import { PAGE_STYLE } from './page-style.js';
import type { ProfilerReport } from './report-model.js';
import { base64, sha256 } from './sha256.js';

const cspHash = (text: string): string => `'sha256-${base64(sha256(text))}'`;

/** A script's text, refused if it could end its own `<script>` element early. */
function inlineScript(text: string, what: string): string {
  if (/<\/script|<!--/i.test(text)) {
    throw new InvalidArgumentError(
      `renderProfilerHtml: ${what} contains '</script' or '<!--' and cannot be inlined; use the Chart.js 4 UMD build`,
    );
  }
  return text;
}

/**
 * The HTML page showing `report`: summary, similarity plot, sortable tables and histograms. Every text of
 * the report is data to the page (JSON, rendered with textContent), and a Content-Security-Policy lets only
 * the page's own inline scripts and style run, so node names cannot inject markup or script.
 */
export function renderProfilerHtml(report: ProfilerReport): string {
  checkReport(report);
  const chart = inlineScript(CHART_JS_UMD, "Chart.js's source");
  const script = inlineScript(PAGE_SCRIPT, 'the page script');
  const csp = [
    "default-src 'none'",
    `script-src ${cspHash(chart)} ${cspHash(script)}`,
    `style-src ${cspHash(PAGE_STYLE)}`,
    'img-src data:',
  ].join('; ');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="QTK @qtk/profiler">
<title>${escapeHtml(report.title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<main id="qtk-report"><noscript>This report draws its tables and charts with JavaScript; enable it to read the report, or read the JSON files beside it.</noscript></main>
<script type="application/json" id="qtk-report-data">${jsonForScript(report)}</script>
<script>${chart}</script>
<script>${script}</script>
</body>
</html>
`;
}
