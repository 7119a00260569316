// The live view of a Runnel app: draws the blueprint from /api/status as a graph of
// streamlets and topics and refreshes the numbers every second. No dependencies.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const LAG_WARNING = 1000; // records behind before a reader counts as lagging
const REFRESH_MS = 1000;
const STREAMLET = { width: 180, height: 100 };
const TOPIC = { width: 160, height: 48 };
const GAP = { x: 44, y: 26 };

const graph = document.getElementById("graph");
const summary = document.getElementById("summary");
const details = document.getElementById("details");
let structureKey = "";
let history = new Map(); // node id -> { lag, restarts, restartedAt, growing }
let latest = null;
let selected = null;

const number = (value) => Math.round(value).toLocaleString("en-US");
// 1234567 -> "1.2 MB".
const bytes = (value) => {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
};

function el(name, attributes = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (parent) parent.appendChild(node);
  return node;
}

// Nodes and edges of the blueprint graph: streamlets write topics, topics feed streamlets.
function structure(status) {
  const nodes = [
    ...status.streamlets.map((s) => ({ id: "s:" + s.name, kind: "streamlet", name: s.name })),
    ...status.topics.map((t) => ({ id: "t:" + t.name, kind: "topic", name: t.name })),
  ];
  const ids = new Set(nodes.map((n) => n.id));
  const edges = [];
  for (const topic of status.topics) {
    for (const path of topic.producers) edges.push(["s:" + path.split(".")[0], "t:" + topic.name]);
    for (const path of topic.consumers) edges.push(["t:" + topic.name, "s:" + path.split(".")[0]]);
  }
  return { nodes, edges: edges.filter(([from, to]) => ids.has(from) && ids.has(to)) };
}

const sizeOf = (node) => (node.kind === "streamlet" ? STREAMLET : TOPIC);
const columnHeight = (members) =>
  members.reduce((sum, node) => sum + sizeOf(node).height, 0) + (members.length - 1) * GAP.y;

// Longest-path layering (bounded, so cycles cannot loop forever), then rows by name.
function layout({ nodes, edges }) {
  const layer = new Map(nodes.map((n) => [n.id, 0]));
  for (let round = 0; round < nodes.length; round++) {
    let changed = false;
    for (const [from, to] of edges) {
      if (layer.get(to) < layer.get(from) + 1 && layer.get(from) + 1 < nodes.length) {
        layer.set(to, layer.get(from) + 1);
        changed = true;
      }
    }
    if (!changed) break;
  }
  const columns = new Map();
  for (const node of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const column = layer.get(node.id);
    if (!columns.has(column)) columns.set(column, []);
    columns.get(column).push(node);
  }
  // Columns are as wide as their widest node; each column is centred vertically.
  const order = [...columns.keys()].sort((a, b) => a - b);
  const tallest = Math.max(...order.map((column) => columnHeight(columns.get(column))));
  const position = new Map();
  let x = GAP.y;
  for (const column of order) {
    const members = columns.get(column);
    let y = GAP.y + (tallest - columnHeight(members)) / 2;
    const width = Math.max(...members.map((node) => sizeOf(node).width));
    for (const node of members) {
      const size = sizeOf(node);
      position.set(node.id, { x: x + (width - size.width) / 2, y, ...size });
      y += size.height + GAP.y;
    }
    x += width + GAP.x;
  }
  const [width, height] = [x - GAP.x + GAP.y, tallest + 2 * GAP.y];
  return { position, width, height };
}

function draw(status) {
  const shape = structure(status);
  const { position, width, height } = layout(shape);
  graph.replaceChildren();
  // Scales to the window's width, but never above natural size.
  graph.setAttribute("viewBox", `0 0 ${width} ${height}`);
  graph.style.maxWidth = `${width}px`;
  const defs = el("defs", {}, graph);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9aa3b2" }, marker);
  for (const [from, to] of shape.edges) {
    const a = position.get(from);
    const b = position.get(to);
    const [x1, y1, x2, y2] = [a.x + a.width, a.y + a.height / 2, b.x, b.y + b.height / 2];
    const bend = Math.max(30, (x2 - x1) / 2);
    el("path", { class: "edge", "marker-end": "url(#arrow)",
      d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}` }, graph);
  }
  for (const node of shape.nodes) {
    const at = position.get(node.id);
    const group = el("g", { class: "node " + node.kind, tabindex: 0, role: "button",
      transform: `translate(${at.x} ${at.y})`, "data-id": node.id,
      ["data-" + node.kind]: node.name }, graph);
    if (node.kind === "streamlet") {
      el("rect", { width: at.width, height: at.height, rx: 8 }, group);
      for (const [line, y] of [["title", 20], ["sub", 36], ["state", 54], ["rates", 71], ["lag", 88]]) {
        el("text", { x: 12, y, class: line === "title" ? "title" : "sub", "data-line": line }, group);
      }
    } else {
      el("rect", { class: "pill", width: at.width, height: at.height, rx: at.height / 2 }, group);
      for (const [line, y] of [["title", 20], ["lag", 37]]) {
        el("text", { x: 18, y, class: line === "title" ? "title" : "sub", "data-line": line }, group);
      }
    }
    group.addEventListener("click", () => select(node.id));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        select(node.id);
      }
    });
  }
}

// healthy, lagging, failing or done, from the state and how lag and restarts move.
function health(id, state, lag, restarts) {
  const now = Date.now();
  const before = history.get(id) || { lag, restarts, restartedAt: 0, growing: 0 };
  const restartedAt = restarts > before.restarts ? now : before.restartedAt;
  const growing = lag > before.lag ? before.growing + 1 : lag < before.lag ? 0 : before.growing;
  history.set(id, { lag, restarts, restartedAt, growing });
  if (state === "restarting" || state === "stalled" || now - restartedAt < 10000) return "failing";
  if (state === "finished" || state === "stopped") return "done";
  if (lag > LAG_WARNING || growing >= 3) return "lagging";
  return "healthy";
}

function setText(group, line, text) {
  const node = group.querySelector(`[data-line="${line}"]`);
  if (node && node.textContent !== text) node.textContent = text;
}

function update(status) {
  for (const s of status.streamlets) {
    const group = graph.querySelector(`[data-id="s:${CSS.escape(s.name)}"]`);
    if (!group) continue;
    const state = health("s:" + s.name, s.state, s.lag, s.restarts);
    group.setAttribute("class", `node streamlet ${state}`);
    group.dataset.state = s.state;
    group.dataset.health = state;
    group.dataset.recordsIn = s.records_in;
    group.dataset.recordsOut = s.records_out;
    group.dataset.lag = s.lag;
    setText(group, "title", s.name);
    setText(group, "sub", s.type);
    setText(group, "state", `${s.state} · ${s.restarts} ${s.restarts === 1 ? "restart" : "restarts"}`);
    setText(group, "rates", `in ${number(s.rate_in)}/s · out ${number(s.rate_out)}/s`);
    const keyed = s.keyed_state;
    const stateSize = keyed ? ` · state ${bytes(keyed.bytes)}` : "";
    setText(group, "lag", (s.inlets.length ? `lag ${number(s.lag)}` : "source") + stateSize);
    if (keyed) {
      group.dataset.stateEntries = keyed.entries;
      group.dataset.stateBytes = keyed.bytes;
    }
    group.setAttribute("aria-label", `streamlet ${s.name}, ${s.state}, ${state}, ` +
      `${number(s.rate_in)} records in and ${number(s.rate_out)} out per second, ` +
      `lag ${number(s.lag)}, ${s.restarts} restarts` +
      (keyed ? `, keyed state ${number(keyed.entries)} entries, ${bytes(keyed.bytes)}` : ""));
  }
  for (const t of status.topics) {
    const group = graph.querySelector(`[data-id="t:${CSS.escape(t.name)}"]`);
    if (!group) continue;
    const end = t.partitions.reduce((sum, p) => sum + p.end, 0);
    const state = health("t:" + t.name, "running", t.lag, 0);
    group.setAttribute("class", `node topic ${state}`);
    group.dataset.health = state;
    group.dataset.lag = t.lag;
    group.dataset.end = end;
    setText(group, "title", t.name);
    const partitions = t.partitions.length === 1 ? "1 partition" : `${t.partitions.length} partitions`;
    setText(group, "lag", `${partitions} · lag ${number(t.lag)}`);
    group.setAttribute("aria-label", `topic ${t.name}, ${partitions}, ${number(end)} records, lag ${number(t.lag)}`);
  }
  const running = status.streamlets.filter((s) => s.state === "running").length;
  const stalled = status.streamlets.filter((s) => s.state === "stalled").length;
  summary.textContent = `${status.ready ? "ready" : "not ready"} · ${running} of ` +
    (stalled ? `${stalled} stalled · ` : "") +
    `${status.streamlets.length} streamlets running · ${status.topics.length} topics · ` +
    `updated ${new Date().toLocaleTimeString()}`;
  if (selected) showDetails(selected);
}

function select(id) {
  selected = id;
  showDetails(id);
  details.hidden = false;
  document.getElementById("details-close").focus();
}

function showDetails(id) {
  if (!latest) return;
  const [kind, name] = [id.slice(0, 1), id.slice(2)];
  const rows = [];
  if (kind === "s") {
    const s = latest.streamlets.find((x) => x.name === name);
    if (!s) return;
    rows.push(["type", s.type], ["state", s.state], ["restarts", s.restarts],
      ["records in", number(s.records_in)], ["records out", number(s.records_out)],
      ["in per second", number(s.rate_in)], ["out per second", number(s.rate_out)],
      ["lag", number(s.lag)], ["dead letters", number(s.dead_lettered)]);
    if (s.watermark !== undefined && s.watermark !== null) {
      const behind = Math.max(0, (Date.now() - s.watermark) / 1000);
      rows.push(["watermark", `${new Date(s.watermark).toISOString()} (${behind.toFixed(1)} s behind)`]);
    }
    if (s.keyed_state) {
      const k = s.keyed_state;
      const held = k.partitions.length ? k.partitions.join(", ") : "none yet";
      rows.push(["keyed state", `${number(k.entries)} entries, ${bytes(k.bytes)} (partitions ${held})`]);
    }
    for (const i of s.inlets) rows.push([`inlet ${i.port}`, `${i.topic}, lag ${i.partition_lag.join(" / ")}`]);
    for (const o of s.outlets) rows.push([`outlet ${o.port}`, `${o.topic}, ${number(o.records)} sent`]);
    for (const problem of s.problems || []) rows.push(["problem", problem.kind]);
    if (s.last_error) rows.push([s.problems && s.problems.length ? "now" : "last error", s.last_error]);
  } else {
    const t = latest.topics.find((x) => x.name === name);
    if (!t) return;
    rows.push(["producers", t.producers.join(", ") || "none (external)"],
      ["consumers", t.consumers.join(", ") || "none (external)"], ["lag", number(t.lag)]);
    for (const p of t.partitions) rows.push([`partition ${p.partition}`, `offsets ${number(p.start)} to ${number(p.end)}`]);
  }
  document.getElementById("details-title").textContent = (kind === "s" ? "Streamlet " : "Topic ") + name;
  const body = document.getElementById("details-body");
  body.replaceChildren(...rows.flatMap(([term, value]) => {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = String(value);
    return [dt, dd];
  }));
}

function closeDetails() {
  details.hidden = true;
  const id = selected;
  selected = null;
  const node = id && graph.querySelector(`[data-id="${CSS.escape(id)}"]`);
  if (node) node.focus();
}

document.getElementById("details-close").addEventListener("click", closeDetails);
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && !details.hidden) closeDetails();
});

// Charts of the last minutes from /api/history: one small chart per streamlet, records in
// per second and lag scaled to the chart's height, stalled stretches as red bands, restarts
// as red lines.
const CHART = { width: 300, height: 70 };
const HISTORY_EVERY_MS = 5000;

function chart(name, points) {
  const figure = document.createElement("figure");
  figure.dataset.chart = name;
  const caption = document.createElement("figcaption");
  const last = points.length ? points[points.length - 1] : null;
  caption.textContent = name;
  const now = document.createElement("span");
  now.textContent = last ? `${number(last.rate_in)}/s · lag ${number(last.lag)}` : "";
  caption.appendChild(now);
  figure.appendChild(caption);
  const svg = el("svg", { viewBox: `0 0 ${CHART.width} ${CHART.height}`, role: "img",
    "aria-label": `${name}: records in per second and lag over the last minutes` }, figure);
  if (points.length < 2) return figure;
  const x = (index) => (index / (points.length - 1)) * CHART.width;
  const scaled = (values) => {
    const top = Math.max(1, ...values);
    return values.map((value, index) => `${x(index).toFixed(1)},${(CHART.height - 4 - (value / top) * (CHART.height - 8)).toFixed(1)}`).join(" ");
  };
  let outages = 0;
  let restarts = 0;
  points.forEach((point, index) => {
    if (point.stalled) {
      outages += 1;
      el("rect", { class: "outage", x: x(index) - CHART.width / points.length / 2,
        y: 0, width: CHART.width / points.length, height: CHART.height }, svg);
    }
    if (index > 0 && point.restarts > points[index - 1].restarts) {
      restarts += 1;
      el("line", { class: "restart", x1: x(index), x2: x(index), y1: 0, y2: CHART.height }, svg);
    }
  });
  el("polyline", { class: "rate", "data-series": "rate", points: scaled(points.map((p) => p.rate_in)) }, svg);
  el("polyline", { class: "lag", "data-series": "lag", points: scaled(points.map((p) => p.lag)) }, svg);
  figure.dataset.points = points.length;
  figure.dataset.outages = outages;
  figure.dataset.restarts = restarts;
  return figure;
}

async function refreshCharts() {
  try {
    const response = await fetch("/api/history", { cache: "no-store" });
    if (response.ok) {
      const history = await response.json();
      const names = history.points.length ? history.points[history.points.length - 1].streamlets.map((s) => s.name) : [];
      const charts = names.map((name) => chart(name,
        history.points.map((point) => point.streamlets.find((s) => s.name === name)).filter(Boolean)));
      document.getElementById("charts").replaceChildren(...charts);
    }
  } catch (error) {
    // The status refresh says when the endpoint is gone.
  }
  setTimeout(refreshCharts, HISTORY_EVERY_MS);
}

async function refresh() {
  try {
    const response = await fetch("/api/status", { cache: "no-store" });
    if (!response.ok) throw new Error(`status ${response.status}`);
    const status = await response.json();
    latest = status;
    document.getElementById("app").textContent = status.app;
    document.title = `Runnel · ${status.app}`;
    const key = JSON.stringify(structure(status));
    if (key !== structureKey) {
      structureKey = key;
      draw(status);
    }
    update(status);
  } catch (error) {
    summary.textContent = `disconnected (${error.message}); retrying`;
  }
  setTimeout(refresh, REFRESH_MS);
}

refresh();
refreshCharts();
