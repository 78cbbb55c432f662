// The stylesheet of profiler.html: system fonts only (the page opens offline), readable in print.
export const PAGE_STYLE = `
:root { --fg: #1d232b; --muted: #5b6573; --line: #d9dee5; --bg-alt: #f5f7fa; --accent: #2f6fb3;
  --bad: #c0392b; --bad-bg: #fdecea; --warn: #b9770e; --warn-bg: #fef5e4; --info-bg: #eaf2fb; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 20px 48px; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 17px; margin: 28px 0 6px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.description { margin: 0 0 8px; color: var(--muted); max-width: 900px; }
.meta { display: flex; flex-wrap: wrap; gap: 4px 22px; margin: 0 0 6px; color: var(--muted); }
.meta b { color: var(--fg); font-weight: 600; }
nav { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 13px; margin: 6px 0 0; }
nav a { color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
ul.summary { list-style: none; margin: 8px 0 0; padding: 0; }
ul.summary li { margin: 4px 0; padding: 6px 10px; border-left: 4px solid var(--accent); background: var(--info-bg);
  border-radius: 3px; white-space: pre-wrap; overflow-wrap: anywhere; }
ul.summary li.error { border-color: var(--bad); background: var(--bad-bg); }
ul.summary li.warning { border-color: var(--warn); background: var(--warn-bg); }
.severity { font-weight: 600; text-transform: uppercase; font-size: 11px; margin-right: 8px; letter-spacing: 0.04em; }
.chart { position: relative; height: 320px; }
.histograms { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 14px; }
figure { margin: 0; padding: 8px; border: 1px solid var(--line); border-radius: 4px; }
figure .chart { height: 190px; }
figcaption { font-size: 13px; margin-bottom: 4px; overflow-wrap: anywhere; }
figcaption .caption { display: block; color: var(--muted); font-size: 12px; }
.count { color: var(--muted); font-size: 12px; font-weight: normal; margin-left: 8px; }
.table-wrap { max-height: 420px; overflow: auto; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
thead th { position: sticky; top: 0; background: var(--bg-alt); border-bottom: 1px solid var(--line); padding: 0;
  text-align: left; white-space: nowrap; }
th button { all: unset; cursor: pointer; display: block; padding: 6px 8px; }
th button:focus-visible { outline: 2px solid var(--accent); outline-offset: -2px; }
th.num button { text-align: right; }
th .arrow { display: inline-block; width: 1em; color: var(--accent); }
td { padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.empty { color: var(--muted); }
tbody tr:nth-child(even) { background: #fafbfc; }
tbody tr.flagged { background: var(--bad-bg); }
.failure { color: var(--bad); font-weight: 600; }
@media print { .table-wrap { max-height: none; overflow: visible; } }
`;
