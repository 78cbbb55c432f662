// The script profiler.html runs: reads the report from its JSON block and builds the page with DOM calls
// only (every text goes through textContent, never innerHTML, so node names cannot inject markup), draws
// the charts with the inlined Chart.js, and makes every table sortable by clicking a column header.
// Plain ES2017 in a string: it runs in the browser as is, without a build step.
export const PAGE_SCRIPT = String.raw`
(function () {
  'use strict';
  var report = JSON.parse(document.getElementById('qtk-report-data').textContent);
  var root = document.getElementById('qtk-report');
  var MODES = { FvsQ: 'float vs calibrated / QAT', CvsQ: 'calibrated vs QAT', QvsQ: 'QAT vs fixed point' };
  var BLUE = '#2f6fb3', RED = '#c0392b', ORANGE = 'rgba(230, 126, 34, 0.55)', GREY = '#7f8c8d';

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function isMissing(v) { return v === null || v === undefined || v === ''; }
  function formatNumber(v, digits) {
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-4)) {
      return v.toExponential(Math.max(0, digits - 1)).replace(/\.?0+e/, 'e');
    }
    return String(Number(v.toPrecision(digits)));
  }
  function formatCell(v, column) {
    if (isMissing(v)) return '\u2014';
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (typeof v !== 'number') return String(v);
    if (column.kind === 'percent') return (v * 100).toFixed(column.digits === undefined ? 2 : column.digits) + ' %';
    if (column.kind === 'number') return formatNumber(v, column.digits || 5);
    return String(v);
  }
  function compareCells(a, b) {
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    if (typeof a === 'number') return -1;
    if (typeof b === 'number') return 1;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function section(id, title, count) {
    var s = el('section');
    s.id = id;
    var h = el('h2', null, title);
    if (count !== undefined) h.appendChild(el('span', 'count', count));
    s.appendChild(h);
    root.appendChild(s);
    return s;
  }

  function renderHeader() {
    var header = el('header');
    header.appendChild(el('h1', null, report.title));
    var meta = report.meta || {};
    var items = [];
    if (meta.models && meta.models.length) items.push(['Models', meta.models.join(' vs ')]);
    if (meta.mode) items.push(['Mode', meta.mode + (MODES[meta.mode] ? ' (' + MODES[meta.mode] + ')' : '')]);
    if (meta.march) items.push(['March', meta.march]);
    if (meta.inputShapes && meta.inputShapes.length) {
      items.push(['Input', meta.inputShapes.map(function (s) { return '[' + s.join(', ') + ']'; }).join(', ')]);
    }
    if (meta.date) items.push(['Date', meta.date]);
    Object.keys(meta.extra || {}).forEach(function (k) { items.push([k, meta.extra[k]]); });
    var line = el('div', 'meta');
    items.forEach(function (item) {
      var span = el('span');
      span.appendChild(el('b', null, item[0] + ': '));
      span.appendChild(document.createTextNode(item[1]));
      line.appendChild(span);
    });
    header.appendChild(line);
    var nav = el('nav');
    var links = [];
    if (report.summary.length) links.push(['summary', 'Summary']);
    if (report.similarity) links.push(['similarity', report.similarity.title || 'Similarity plot']);
    report.tables.forEach(function (t) { links.push(['table-' + t.id, t.title]); });
    if (report.histograms.length) links.push(['histograms', 'Histograms']);
    links.forEach(function (l) {
      var a = el('a', null, l[1]);
      a.href = '#' + l[0];
      nav.appendChild(a);
    });
    header.appendChild(nav);
    root.appendChild(header);
  }

  function renderSummary() {
    if (!report.summary.length) return;
    var s = section('summary', 'Summary');
    var ul = el('ul', 'summary');
    report.summary.forEach(function (note) {
      var li = el('li', note.severity);
      li.appendChild(el('span', 'severity', note.severity));
      li.appendChild(document.createTextNode(note.text));
      ul.appendChild(li);
    });
    s.appendChild(ul);
  }

  function chartBox(parent) {
    var box = el('div', 'chart');
    var canvas = el('canvas');
    box.appendChild(canvas);
    parent.appendChild(box);
    return canvas;
  }

  function renderSimilarity() {
    var sim = report.similarity;
    if (!sim) return;
    var flaggedCount = sim.points.filter(function (p) { return p.flagged; }).length;
    var s = section('similarity', sim.title || 'Similarity plot', sim.points.length + ' nodes, ' + flaggedCount + ' flagged');
    var points = sim.points;
    var labels = points.map(function (p, i) { return i + ' ' + p.name; });
    var datasets = [
      { label: sim.metric, data: points.map(function (p) { return p.value; }), yAxisID: 'y', borderColor: BLUE,
        backgroundColor: BLUE, pointRadius: points.length > 100 ? 0 : 2, borderWidth: 2, order: 1 },
    ];
    if (points.some(function (p) { return !isMissing(p.sameInput); })) {
      datasets.push({ label: sim.metric + ' (same input: error the node adds)', yAxisID: 'y', borderColor: '#27ae60',
        backgroundColor: '#27ae60', borderDash: [5, 4], pointRadius: points.length > 100 ? 0 : 1, borderWidth: 1.5, order: 2,
        data: points.map(function (p) { return isMissing(p.sameInput) ? null : p.sameInput; }) });
    }
    datasets.push({ label: 'flagged', yAxisID: 'y', showLine: false, pointRadius: 6, pointStyle: 'triangle',
      borderColor: RED, backgroundColor: RED, order: 0,
      data: points.map(function (p) { return p.flagged ? p.value : null; }) });
    if (sim.threshold !== null && sim.threshold !== undefined) {
      datasets.push({ label: 'threshold ' + sim.threshold, yAxisID: 'y', borderColor: GREY, borderDash: [2, 3],
        borderWidth: 1, pointRadius: 0, order: 3, data: points.map(function () { return sim.threshold; }) });
    }
    var steps = points.map(function (p) { return p.maxDiffSteps; });
    var positive = steps.filter(function (v) { return typeof v === 'number' && v > 0; });
    // a broken node can be thousands of steps off while the others are within one: a log axis shows both
    var logSteps = positive.length > 0 && Math.max.apply(null, positive) / Math.min.apply(null, positive) > 100;
    function stepTick(v) {
      v = Number(v);
      if (!logSteps || v <= 0) return formatNumber(v, 3);
      // a log axis labels 1, 2 and 5 of each decade only, or the labels overlap
      var significand = Math.round(v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9)));
      return significand === 1 || significand === 2 || significand === 5 ? formatNumber(v, 3) : '';
    }
    datasets.push({ type: 'bar', label: 'max diff (quantization steps)', yAxisID: 'steps', backgroundColor: ORANGE,
      order: 4, data: steps });
    new Chart(chartBox(s), {
      type: 'line',
      data: { labels: labels, datasets: datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, spanGaps: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          // long module paths would eat the plot: the axis shows their end (only the index for many nodes),
          // the tooltip the whole name
          x: { ticks: { autoSkip: true, maxRotation: 45, minRotation: 0, callback: function (v, i) {
            var name = points[i] ? points[i].name : '';
            if (points.length > 60) return String(i);
            return i + ' ' + (name.length > 24 ? '\u2026' + name.slice(-23) : name);
          } } },
          y: { position: 'left', title: { display: true, text: sim.metric } },
          steps: { type: logSteps ? 'logarithmic' : 'linear', position: 'right', beginAtZero: !logSteps,
            min: logSteps ? Math.pow(10, Math.floor(Math.log10(Math.min.apply(null, positive)))) : undefined,
            grid: { drawOnChartArea: false }, ticks: { callback: stepTick },
            title: { display: true, text: 'max diff (steps)' } },
        },
        plugins: { legend: { position: 'top', labels: { boxWidth: 14, sort: function (a, b) { return a.datasetIndex - b.datasetIndex; } } } },
      },
    });
  }

  function renderTable(table) {
    var s = section('table-' + table.id, table.title, table.rows.length + (table.rows.length === 1 ? ' row' : ' rows'));
    if (table.description) s.appendChild(el('p', 'description', table.description));
    var wrap = el('div', 'table-wrap');
    var t = el('table');
    t.id = 'qtk-table-' + table.id;
    var headRow = el('tr');
    var headers = table.columns.map(function (column, c) {
      var numeric = column.kind !== 'text';
      var th = el('th', numeric ? 'num' : null);
      th.setAttribute('aria-sort', 'none');
      th.dataset.key = column.key;
      var button = el('button', null, column.label);
      button.type = 'button';
      if (column.help) button.title = column.help;
      var arrow = el('span', 'arrow');
      button.appendChild(arrow);
      button.addEventListener('click', function () { sortBy(c); });
      th.appendChild(button);
      headRow.appendChild(th);
      return { th: th, arrow: arrow };
    });
    var thead = el('thead');
    thead.appendChild(headRow);
    t.appendChild(thead);
    var tbody = el('tbody');
    var trs = table.rows.map(function (row) {
      var tr = el('tr', table.flagKey && row[table.flagKey] === true ? 'flagged' : null);
      table.columns.forEach(function (column) {
        var v = row[column.key];
        var td = el('td', (column.kind !== 'text' ? 'num' : '') + (isMissing(v) ? ' empty' : ''), formatCell(v, column));
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
      return tr;
    });
    t.appendChild(tbody);
    wrap.appendChild(t);
    s.appendChild(wrap);

    var current = -1, descending = false;
    function sortBy(c, forceDescending) {
      descending = forceDescending !== undefined ? forceDescending : current === c ? !descending : false;
      current = c;
      var key = table.columns[c].key;
      var order = table.rows.map(function (_, i) { return i; });
      order.sort(function (i, j) {
        var a = table.rows[i][key], b = table.rows[j][key];
        var ma = isMissing(a), mb = isMissing(b);
        if (ma || mb) return ma === mb ? 0 : ma ? 1 : -1;
        return descending ? compareCells(b, a) : compareCells(a, b);
      });
      order.forEach(function (i) { tbody.appendChild(trs[i]); });
      headers.forEach(function (h, k) {
        h.th.setAttribute('aria-sort', k === c ? (descending ? 'descending' : 'ascending') : 'none');
        h.arrow.textContent = k === c ? (descending ? '\u25bc' : '\u25b2') : '';
      });
    }
    if (table.sort) {
      var c0 = table.columns.findIndex(function (col) { return col.key === table.sort.key; });
      if (c0 >= 0) sortBy(c0, !!table.sort.descending);
    }
  }

  function renderHistograms() {
    if (!report.histograms.length) return;
    var s = section('histograms', 'Histograms', report.histograms.length + ' nodes');
    var grid = el('div', 'histograms');
    s.appendChild(grid);
    report.histograms.forEach(function (h) {
      var fig = el('figure');
      var cap = el('figcaption', null, h.title);
      if (h.caption) cap.appendChild(el('span', 'caption', h.caption));
      fig.appendChild(cap);
      grid.appendChild(fig);
      var clip = h.clip;
      var colors = h.counts.map(function (_, i) {
        var outside = clip && (h.edges[i + 1] <= clip.min || h.edges[i] >= clip.max);
        return outside ? RED : BLUE;
      });
      new Chart(chartBox(fig), {
        type: 'bar',
        data: {
          labels: h.counts.map(function (_, i) { return formatNumber((h.edges[i] + h.edges[i + 1]) / 2, 3); }),
          datasets: [{ label: h.node, data: h.counts, backgroundColor: colors, barPercentage: 1, categoryPercentage: 1 }],
        },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false,
          scales: { x: { ticks: { autoSkip: true, maxRotation: 0 } }, y: { beginAtZero: true, title: { display: true, text: 'count' } } },
          plugins: { legend: { display: false } },
        },
      });
    });
  }

  try {
    if (typeof Chart === 'undefined') throw new Error('Chart.js did not load');
    renderHeader();
    renderSummary();
    renderSimilarity();
    report.tables.forEach(renderTable);
    renderHistograms();
    document.documentElement.dataset.qtkReady = 'true';
  } catch (err) {
    root.appendChild(el('p', 'failure', 'The report could not be drawn: ' + (err && err.message ? err.message : err)));
    document.documentElement.dataset.qtkReady = 'failed';
    throw err;
  }
})();
`;
