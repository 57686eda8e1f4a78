// @ts-check
// The usage view: GET /dashboard/api/usage (48 hourly or 90 daily UTC buckets, oldest first) as
// three bar charts drawn in inline SVG (requests, tokens, and the refused or failed requests
// stacked by kind). Each chart is an image with a summary for screen readers, a focusable point
// per bucket (one tab stop, arrow keys between them) with a tooltip, and a data table beside it.
// Colours come from classes (the CSP forbids style attributes; geometry is SVG attributes and
// CSSOM positions, which it allows).
import { $, api, cell, checkedValue, element, isSignedOut, messageOf, session, showError, signedOut } from "./shared.js";

/** @typedef {import("./shared.js").KeyRow} KeyRow */
/** @typedef {"hour" | "day"} Bucket */
/** @typedef {"requests" | "tokens" | "rate_limited" | "client_errors" | "server_errors"} Field */
/**
 * One bucket of GET /dashboard/api/usage: its start (ISO, UTC) and its counts.
 * @typedef {{ start: string } & Record<Field, number>} UsagePoint
 */
/** @typedef {{ bucket: Bucket, key: number | null, points: UsagePoint[] }} UsageAnswer */
/** @typedef {{ field: Field, label: string, className: string }} Series */
/** @typedef {{ id: string, title: string, series: Series[] }} ChartSpec */
/** @typedef {{ top: number, right: number, bottom: number, left: number }} Margin */
/**
 * Where a chart was last drawn: what places its points and tooltip.
 * @typedef {{ width: number, margin: Margin, column: number, plotHeight: number, y: (v: number) => number, values: number[] }} Geometry
 */
/**
 * A chart's elements, and the state of its drawing.
 * @typedef {object} Chart
 * @property {ChartSpec} spec
 * @property {HTMLElement} figure
 * @property {HTMLElement} heading
 * @property {HTMLElement} box
 * @property {HTMLElement} points
 * @property {HTMLElement} tip
 * @property {HTMLElement} head
 * @property {HTMLElement} body
 * @property {HTMLElement} tableCaption
 * @property {SVGSVGElement | null} svg
 * @property {number | null} focus The focused (or last focused) point's index.
 * @property {Bucket | null} bucket
 * @property {Geometry | null} geometry
 */

const SVG = "http://www.w3.org/2000/svg";

/** @type {ChartSpec[]} */
const CHARTS = [
  { id: "requests", title: "Requests", series: [{ field: "requests", label: "Requests", className: "s-requests" }] },
  { id: "tokens", title: "Tokens", series: [{ field: "tokens", label: "Tokens", className: "s-tokens" }] },
  {
    id: "errors",
    title: "Refused and failed requests",
    series: [
      { field: "rate_limited", label: "Rate-limited (429)", className: "s-429" },
      { field: "client_errors", label: "Other 4xx", className: "s-4xx" },
      { field: "server_errors", label: "5xx", className: "s-5xx" },
    ],
  },
];
/** @type {Field[]} */
const FIELDS = ["requests", "tokens", "rate_limited", "client_errors", "server_errors"];
/** @type {Record<Bucket, { each: string, span: string, column: string }>} */
const PERIODS = {
  hour: { each: "hour", span: "last 48 hours", column: "Hour (UTC)" },
  day: { each: "day", span: "last 90 days", column: "Day (UTC)" },
};

const usage = {
  /** @type {Bucket} */
  bucket: "hour",
  /** The key shown ("" for all keys). */
  key: "",
  /** @type {UsageAnswer | null} The last answer. */
  data: null,
  /** @type {AbortController | null} The load in flight. */
  loading: null,
  /** Loads rendered so far (data-version on the panel, for tests and scripts to wait on). */
  version: 0,
  /** @type {Map<string, Chart>} Chart id → its elements and the index of its focused point. */
  charts: new Map(),
  /** @type {Map<Chart, number>} Width each chart was last drawn at (redrawn when it changes). */
  widths: new Map(),
};

const whole = new Intl.NumberFormat();
const compact = new Intl.NumberFormat(undefined, { notation: "compact", maximumFractionDigits: 1 });
const dayShort = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", month: "short", day: "numeric" });
const dayLong = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", weekday: "short", month: "short", day: "numeric" });
const hourOnly = new Intl.DateTimeFormat(undefined, { timeZone: "UTC", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
const clock = new Intl.DateTimeFormat(undefined, {
  timeZone: "UTC",
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
  hourCycle: "h23",
});

/**
 * An SVG element with attributes and a class.
 * @template {keyof SVGElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number>} [attributes]
 * @returns {SVGElementTagNameMap[K]}
 */
function svgElement(tag, attributes = {}, className = "") {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (className) element.setAttribute("class", className);
  return element;
}

/**
 * A bucket as people read it: "Nov 26, 06:00–07:00 UTC" or "Thu, Nov 26 (UTC)".
 * @param {string} start
 * @param {Bucket} bucket
 */
function bucketName(start, bucket) {
  const date = new Date(start);
  if (bucket === "day") return `${dayLong.format(date)} (UTC)`;
  const end = new Date(date.getTime() + 3_600_000);
  return `${dayShort.format(date)}, ${hourOnly.format(date)}–${hourOnly.format(end)} UTC`;
}

/**
 * A bucket in a table cell: "Nov 26, 06:00" or "Thu, Nov 26".
 * @param {string} start
 * @param {Bucket} bucket
 */
function bucketCell(start, bucket) {
  const date = new Date(start);
  return bucket === "day" ? dayLong.format(date) : `${dayShort.format(date)}, ${hourOnly.format(date)}`;
}

/**
 * @param {number} n
 * @param {string} one
 * @param {string} many
 */
function plural(n, one, many) {
  return `${whole.format(n)} ${n === 1 ? one : many}`;
}

/**
 * Everything one bucket holds, in words (a point's accessible name and its tooltip's lines).
 * @param {UsagePoint} point
 * @param {Bucket} bucket
 */
function bucketLines(point, bucket) {
  return [
    bucketName(point.start, bucket),
    `${plural(point.requests, "request", "requests")}, ${plural(point.tokens, "token", "tokens")}`,
    `${whole.format(point.rate_limited)} rate-limited (429), ${whole.format(point.client_errors)} other 4xx, ${whole.format(point.server_errors)} 5xx`,
  ];
}

/** The top of the value axis and its ticks: 0 … max in 4 or 5 round steps (whole numbers). */
function valueAxis(/** @type {number} */ largest) {
  if (largest <= 0) return { max: 4, ticks: [0, 1, 2, 3, 4] };
  const rough = largest / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const steps = [1, 2, 2.5, 5, 10].map((m) => m * power);
  const step = Math.max(1, steps.find((s) => s >= rough) ?? 10 * power);
  const max = Math.ceil(largest / step) * step;
  const ticks = [];
  for (let v = 0; v <= max + step / 2; v += step) ticks.push(v);
  return { max, ticks };
}

/** Which buckets get a label on the time axis: every `step`-th, on round hours or counted back from today. */
/**
 * @param {UsagePoint[]} points
 * @param {Bucket} bucket
 * @param {number} columnWidth
 */
function timeTicks(points, bucket, columnWidth) {
  const choices = bucket === "hour" ? [1, 2, 3, 4, 6, 12, 24] : [1, 2, 7, 14, 30];
  const room = bucket === "hour" ? 52 : 50;
  const step = choices.find((s) => s * columnWidth >= room) ?? Math.max(...choices);
  /** @type {{ i: number, text: string, strong: boolean }[]} */
  const ticks = [];
  points.forEach((point, i) => {
    const date = new Date(point.start);
    const on = bucket === "hour" ? date.getUTCHours() % step === 0 : (points.length - 1 - i) % step === 0;
    if (!on) return;
    const midnight = bucket === "hour" && date.getUTCHours() === 0;
    ticks.push({ i, text: bucket === "day" || midnight ? dayShort.format(date) : hourOnly.format(date), strong: midnight });
  });
  return ticks;
}

/** The chart's figure: heading, legend (stacked series), drawing box, data table in a <details>. */
/**
 * @param {ChartSpec} spec
 * @returns {Chart}
 */
function createChart(spec) {
  const heading = element("h3", "", { id: `chart-${spec.id}-title` });
  const figure = element("figure", "chart", { id: `chart-${spec.id}`, "aria-labelledby": heading.id });
  const caption = element("figcaption");
  caption.append(heading);
  // A legend for stacked series, under the drawing (the charts' plots stay level side by side).
  let legend = null;
  if (spec.series.length > 1) {
    legend = element("ul", "legend", { "aria-label": "Legend" });
    for (const series of spec.series) {
      const item = element("li");
      item.append(element("span", `swatch ${series.className}`, { "aria-hidden": "true" }), series.label);
      legend.append(item);
    }
  }
  const box = element("div", "chart-box");
  const points = element("div", "chart-points");
  const tip = element("div", "chart-tip", { "aria-hidden": "true" });
  tip.hidden = true;
  box.append(points, tip);

  const details = element("details", "chart-data");
  const summary = element("summary");
  summary.textContent = "Show the numbers as a table";
  const tableCaption = element("caption", "visually-hidden", { id: `chart-${spec.id}-table-caption` });
  const wrap = element("div", "table-wrap chart-table", { role: "region", "aria-labelledby": tableCaption.id });
  wrap.tabIndex = 0;
  const table = element("table");
  const head = element("thead");
  const body = element("tbody");
  table.append(tableCaption, head, body);
  wrap.append(table);
  details.append(summary, wrap);
  figure.append(caption, box, ...(legend ? [legend] : []), details);

  /** @type {Chart} */
  const chart = { spec, figure, heading, box, points, tip, head, body, tableCaption, svg: null, focus: null, bucket: null, geometry: null };
  points.addEventListener("keydown", (event) => movePointFocus(chart, event));
  points.addEventListener("focusin", (event) => pointEvent(chart, event.target, true));
  points.addEventListener("focusout", () => hideTip(chart));
  points.addEventListener("pointerover", (event) => pointEvent(chart, event.target, false));
  points.addEventListener("pointerleave", () => {
    const focused = chart.points.contains(document.activeElement) ? document.activeElement : null;
    if (focused) pointEvent(chart, focused, true);
    else hideTip(chart);
  });
  return chart;
}

/**
 * @param {Chart} chart
 * @param {EventTarget | null} target
 * @param {boolean} focused
 */
function pointEvent(chart, target, focused) {
  if (!(target instanceof HTMLElement)) return;
  const index = Number(target.dataset.index);
  if (!Number.isInteger(index)) return;
  if (focused) chart.focus = index;
  showTip(chart, index);
}

export function initUsage() {
  const container = $("usage-charts");
  for (const spec of CHARTS) {
    const chart = createChart(spec);
    usage.charts.set(spec.id, chart);
    container.append(chart.figure);
  }
  for (const radio of document.querySelectorAll('input[name="usage-bucket"]')) {
    radio.addEventListener("change", () => {
      usage.bucket = checkedValue("usage-bucket") === "day" ? "day" : "hour";
      void refreshUsage();
    });
  }
  const select = $("usage-key", HTMLSelectElement);
  select.addEventListener("change", () => {
    usage.key = select.value;
    void refreshUsage();
  });
  $("usage-refresh").addEventListener("click", () => void refreshUsage());
  // Charts are drawn at their box's width in pixels (text keeps its size): redrawn when it changes.
  new ResizeObserver(() => {
    if (usage.data && !$("usage").hidden) drawCharts(usage.data, false);
  }).observe(container);
}

/** The key selector's options: all keys, then each key (revoked ones said so); the choice kept if it still exists. */
export function renderUsageKeys(/** @type {KeyRow[]} */ keys) {
  const select = $("usage-key", HTMLSelectElement);
  const current = select.value;
  const options = [new Option("All keys", "")];
  for (const key of keys) options.push(new Option(`${key.name} (${key.prefix}…)${key.revoked_at ? ", revoked" : ""}`, String(key.id)));
  select.replaceChildren(...options);
  select.value = options.some((o) => o.value === current) ? current : "";
  if (select.value !== usage.key) {
    usage.key = select.value;
    void refreshUsage();
  }
}

export async function refreshUsage() {
  if (session.csrf === null) return;
  usage.loading?.abort();
  const controller = new AbortController();
  usage.loading = controller;
  const query = new URLSearchParams({ bucket: usage.bucket });
  if (usage.key !== "") query.set("key", usage.key);
  $("usage-charts").setAttribute("aria-busy", "true");
  $("usage-status").textContent = "Loading…";
  try {
    const data = /** @type {UsageAnswer} */ (await api("GET", `/dashboard/api/usage?${query}`, undefined, controller.signal));
    if (usage.loading !== controller) return;
    usage.data = data;
    showError($("usage-error"), "");
    renderUsage(data);
    $("usage-status").textContent = `Updated ${clock.format(new Date())} UTC`;
  } catch (error) {
    if (controller.signal.aborted) return;
    if (isSignedOut(error)) return signedOut();
    $("usage-status").textContent = "";
    showError($("usage-error"), `Usage could not be loaded: ${messageOf(error)}`);
  } finally {
    if (usage.loading === controller) {
      usage.loading = null;
      $("usage-charts").setAttribute("aria-busy", "false");
    }
  }
}

/** Shows `data`, the answer just loaded. */
function renderUsage(/** @type {UsageAnswer} */ data) {
  const { points } = data;
  for (const field of FIELDS) {
    const total = points.reduce((sum, p) => sum + p[field], 0);
    $(`usage-total-${field.replace("_", "-")}`).textContent = whole.format(total);
  }
  drawCharts(data, true);
  usage.version++;
  $("usage").dataset.version = String(usage.version);
}

/**
 * Draws every chart; `tables`: the data changed, so the tables are rebuilt too (not on a resize).
 * @param {UsageAnswer} data
 * @param {boolean} tables
 */
function drawCharts(data, tables) {
  const { points, bucket } = data;
  for (const chart of usage.charts.values()) {
    const width = Math.floor(chart.box.clientWidth);
    if (width === 0) continue;
    if (!tables && usage.widths.get(chart) === width) continue;
    usage.widths.set(chart, width);
    drawChart(chart, points, bucket, width);
    if (tables) fillTable(chart, points, bucket);
  }
}

/**
 * @param {ChartSpec} spec
 * @param {Bucket} bucket
 */
function chartTitle(spec, bucket) {
  return `${spec.title} per ${PERIODS[bucket].each}`;
}

/**
 * The chart's summary, its image's accessible name: what it shows and its totals.
 * @param {ChartSpec} spec
 * @param {UsagePoint[]} points
 * @param {Bucket} bucket
 * @param {number[]} values Each bucket's height (its series summed).
 */
function chartSummary(spec, points, bucket, values) {
  const what = `${chartTitle(spec, bucket)}, ${PERIODS[bucket].span} (UTC)`;
  if (spec.series.length > 1) {
    const totals = spec.series.map((s) => `${whole.format(points.reduce((sum, p) => sum + p[s.field], 0))} ${s.label}`);
    return `${what}: ${totals.join(", ")}.`;
  }
  const total = values.reduce((a, b) => a + b, 0);
  const most = Math.max(...values);
  const top = points[values.indexOf(most)];
  if (total === 0 || !top) return `${what}: none.`;
  return `${what}: ${whole.format(total)} in all; the most, ${whole.format(most)}, in ${bucketName(top.start, bucket)}.`;
}

/**
 * @param {Chart} chart
 * @param {UsagePoint[]} points
 * @param {Bucket} bucket
 * @param {number} width In pixels: its box's.
 */
function drawChart(chart, points, bucket, width) {
  const { spec } = chart;
  const values = points.map((p) => spec.series.reduce((sum, s) => sum + p[s.field], 0));
  const axis = valueAxis(Math.max(0, ...values));
  const labels = axis.ticks.map((v) => compact.format(v));
  const height = width < 480 ? 150 : 180;
  const margin = { top: 10, right: 6, bottom: 26, left: 14 + 7 * Math.max(...labels.map((l) => l.length)) };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const column = plotWidth / points.length;
  const y = (/** @type {number} */ v) => margin.top + plotHeight - (v / axis.max) * plotHeight;

  chart.heading.textContent = chartTitle(spec, bucket);
  const svg = svgElement("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" }, "chart-svg");
  svg.setAttribute("aria-label", chartSummary(spec, points, bucket, values));

  const grid = svgElement("g", {}, "grid");
  axis.ticks.forEach((v, i) => {
    const at = Math.round(y(v)) + 0.5;
    grid.append(svgElement("line", { x1: margin.left, x2: width - margin.right, y1: at, y2: at }, i === 0 ? "baseline" : "gridline"));
    const label = svgElement("text", { x: margin.left - 6, y: at, "text-anchor": "end", "dominant-baseline": "middle" }, "axis");
    label.textContent = labels[i] ?? "";
    grid.append(label);
  });
  svg.append(grid);

  const bars = svgElement("g", {}, "bars");
  const barWidth = Math.max(1, Math.min(column * 0.72, column - 1));
  points.forEach((point, i) => {
    let top = y(0);
    const x = margin.left + i * column + (column - barWidth) / 2;
    for (const series of spec.series) {
      const value = point[series.field];
      if (value <= 0) continue;
      // A bucket with little in it still shows (at least a pixel and a half).
      const h = Math.max(1.5, (value / axis.max) * plotHeight);
      top -= h;
      const rect = svgElement(
        "rect",
        { x: x.toFixed(2), y: top.toFixed(2), width: barWidth.toFixed(2), height: h.toFixed(2) },
        `bar ${series.className}`,
      );
      rect.dataset.series = series.field;
      bars.append(rect);
    }
  });
  svg.append(bars);

  const times = svgElement("g", {}, "times");
  // Newest first, so the latest bucket is always labelled; a label that would touch the one after it is left out.
  let room = width;
  for (const tick of timeTicks(points, bucket, column).reverse()) {
    const cx = margin.left + (tick.i + 0.5) * column;
    // A label near an edge ends (or starts) at its tick instead of running out of the drawing.
    const half = tick.text.length * 3.4;
    const anchor = cx + half > width ? "end" : cx - half < 0 ? "start" : "middle";
    const [from, to] = anchor === "end" ? [cx - 2 * half, cx] : anchor === "start" ? [cx, cx + 2 * half] : [cx - half, cx + half];
    if (to > room - 6) continue;
    room = from;
    times.append(svgElement("line", { x1: cx, x2: cx, y1: y(0), y2: y(0) + 4 }, "tick"));
    const label = svgElement("text", { x: cx, y: height - 6, "text-anchor": anchor }, tick.strong ? "axis strong" : "axis");
    label.textContent = tick.text;
    times.append(label);
  }
  svg.append(times);
  if (values.every((v) => v === 0)) {
    const empty = svgElement("text", { x: margin.left + plotWidth / 2, y: margin.top + plotHeight / 2, "text-anchor": "middle" }, "empty");
    empty.textContent = `None in the ${PERIODS[bucket].span}`;
    svg.append(empty);
  }

  // One focusable point per bucket over the drawing, a column of the plot's height.
  const refocus = chart.points.contains(document.activeElement);
  if (chart.bucket !== bucket) chart.focus = null;
  chart.bucket = bucket;
  const focus = Math.min(chart.focus ?? points.length - 1, points.length - 1);
  chart.focus = focus;
  const pointElements = points.map((point, i) => {
    const element = document.createElement("span");
    element.className = "chart-point";
    element.setAttribute("role", "img");
    element.setAttribute("aria-label", bucketLines(point, bucket).join("; "));
    element.dataset.index = String(i);
    element.tabIndex = i === focus ? 0 : -1;
    element.style.left = `${margin.left + i * column}px`;
    element.style.width = `${column}px`;
    element.style.top = `${margin.top}px`;
    element.style.height = `${plotHeight}px`;
    return element;
  });
  chart.geometry = { width, margin, column, plotHeight, y, values };
  chart.svg?.remove();
  chart.svg = svg;
  chart.box.prepend(svg);
  chart.points.replaceChildren(...pointElements);
  hideTip(chart);
  if (refocus) pointElements[focus]?.focus();
}

/**
 * The tooltip beside bucket `index` (left of it in the chart's right half, else right), not over the column.
 * @param {Chart} chart
 * @param {number} index
 */
function showTip(chart, index) {
  const point = usage.data?.points[index];
  if (!usage.data || !point || !chart.geometry) return;
  const { width, margin, column } = chart.geometry;
  const [name, ...counts] = bucketLines(point, usage.data.bucket);
  const strong = document.createElement("strong");
  strong.textContent = name ?? "";
  chart.tip.replaceChildren(strong, ...counts.map((text) => Object.assign(document.createElement("span"), { textContent: text })));
  chart.tip.hidden = false;
  const tipWidth = chart.tip.offsetWidth;
  const left = margin.left + index * column;
  const x = left + column / 2 > width / 2 ? left - tipWidth - 6 : left + column + 6;
  chart.tip.style.left = `${Math.max(0, Math.min(width - tipWidth, x))}px`;
  chart.tip.style.top = `${margin.top}px`;
}

function hideTip(/** @type {Chart} */ chart) {
  chart.tip.hidden = true;
}

/**
 * ← → Home End (and PageUp/PageDown: a day or a week) move between a chart's buckets: one tab stop each chart.
 * @param {Chart} chart
 * @param {KeyboardEvent} event
 */
function movePointFocus(chart, event) {
  const elements = [...chart.points.children].filter((e) => e instanceof HTMLElement);
  const active = document.activeElement;
  const at = active instanceof HTMLElement ? elements.indexOf(active) : -1;
  if (at < 0 || !usage.data) return;
  const page = usage.data.bucket === "hour" ? 24 : 7;
  /** @type {Record<string, number>} */
  const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: elements.length - 1, PageUp: at - page, PageDown: at + page };
  const next = moves[event.key];
  if (next === undefined) return;
  const target = Math.max(0, Math.min(elements.length - 1, next));
  const from = elements[at];
  const to = elements[target];
  if (!from || !to) return;
  event.preventDefault();
  from.tabIndex = -1;
  to.tabIndex = 0;
  chart.focus = target;
  to.focus();
}

/**
 * The chart's numbers as a table, newest bucket first.
 * @param {Chart} chart
 * @param {UsagePoint[]} points
 * @param {Bucket} bucket
 */
function fillTable(chart, points, bucket) {
  const { spec } = chart;
  chart.tableCaption.textContent = `${chartTitle(spec, bucket)}, ${PERIODS[bucket].span}, newest first`;
  const headRow = document.createElement("tr");
  for (const text of [PERIODS[bucket].column, ...spec.series.map((s) => s.label)]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = text;
    if (text !== PERIODS[bucket].column) th.className = "num";
    headRow.append(th);
  }
  chart.head.replaceChildren(headRow);
  const rows = [];
  for (const point of points.slice().reverse()) {
    const row = document.createElement("tr");
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = bucketCell(point.start, bucket);
    row.append(th, ...spec.series.map((s) => cell(whole.format(point[s.field]), "num")));
    rows.push(row);
  }
  chart.body.replaceChildren(...rows);
}

export function clearUsage() {
  usage.loading?.abort();
  usage.loading = null;
  usage.data = null;
  usage.widths.clear();
  for (const chart of usage.charts.values()) {
    chart.svg?.remove();
    chart.svg = null;
    chart.points.replaceChildren();
    chart.body.replaceChildren();
    hideTip(chart);
  }
  for (const field of FIELDS) $(`usage-total-${field.replace("_", "-")}`).textContent = "–";
  $("usage-status").textContent = "";
}
