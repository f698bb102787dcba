// The Cohort dashboard: a little vanilla JavaScript over the JSON API (docs/http.md).
// No build step, no library. Each page (body[data-page]) renders from the API and keeps
// itself up to date through Server-Sent Events.
"use strict";

const cohort = {
  token: localStorage.getItem("cohort.token") || "",
  who: { role: "viewer", may: { read: true, cancel: false, drain: false } },
};

// ---- helpers ----------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(state) {
  return el("span", { class: "badge s-" + state, dataset: { state } }, state);
}

function seconds(ms) {
  const s = ms / 1000;
  if (s < 10) return s.toFixed(1) + " s";
  if (s < 120) return Math.round(s) + " s";
  if (s < 7200) return Math.round(s / 60) + " min";
  if (s < 172800) return Math.round(s / 3600) + " h";
  return Math.round(s / 86400) + " d";
}

function ago(time) {
  return time ? seconds(Math.max(0, Date.now() - Date.parse(time))) + " ago" : "";
}

function took(start, end) {
  if (!start) return "";
  return seconds(Math.max(0, (end ? Date.parse(end) : Date.now()) - Date.parse(start)));
}

function clock(time) {
  return time ? new Date(time).toLocaleString() : "";
}

function message(text, kind) {
  const box = document.getElementById("message");
  box.replaceChildren(text ? el("div", { class: "message " + (kind || "error") }, text) : "");
}

async function api(path, options) {
  const headers = Object.assign({}, (options && options.headers) || {});
  if (cohort.token) headers["Authorization"] = "Bearer " + cohort.token;
  const response = await fetch(path, Object.assign({}, options, { headers }));
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const text = body && body.error ? body.error.message : response.status + " " + response.statusText;
    const error = new Error(text);
    error.status = response.status;
    throw error;
  }
  return body;
}

function post(path, body) {
  return api(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
}

// ---- who am I: the token ----------------------------------------------------

async function identify() {
  const who = document.getElementById("who");
  try {
    cohort.who = await api("/api/whoami");
    const may = ["read"];
    if (cohort.who.may.cancel) may.push("cancel");
    if (cohort.who.may.drain) may.push("drain");
    who.textContent = (cohort.who.name ? cohort.who.name + " (" + cohort.who.role + ")" : "viewer, no token")
      + " · may " + may.join(", ");
    if (cohort.who.tokenNeeded && !cohort.who.authenticated) {
      message("This coordinator runs under CURVE: reading needs a token. Paste one at the top right.");
    }
  } catch (error) {
    cohort.who = { role: "viewer", may: { read: true, cancel: false, drain: false } };
    if (error.status === 401 && cohort.token) {
      // A stale token (the dashboard restarted with other tokens): forget it, or every read fails.
      cohort.token = "";
      localStorage.removeItem("cohort.token");
      const input = document.getElementById("token");
      if (input) input.value = "";
      who.textContent = "token refused and forgotten: " + error.message;
      message("The saved token was refused (" + error.message + ") and is forgotten; paste a valid one.");
    } else {
      who.textContent = "token refused: " + error.message;
    }
  }
  document.body.dataset.role = cohort.who.role;
}

// An event stream's address: an EventSource cannot send headers, so the token goes along as a
// parameter (needed under CURVE).
function streamURL(path) {
  return cohort.token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(cohort.token) : path;
}

function setupToken(onChange) {
  const input = document.getElementById("token");
  input.value = cohort.token;
  document.getElementById("token-save").addEventListener("click", async () => {
    cohort.token = input.value.trim();
    localStorage.setItem("cohort.token", cohort.token);
    await identify();
    // Under CURVE the event streams carry the token in their address: open them again.
    if (cohort.who.tokenNeeded) { location.reload(); return; }
    onChange();
  });
  document.getElementById("token-clear").addEventListener("click", async () => {
    cohort.token = "";
    input.value = "";
    localStorage.removeItem("cohort.token");
    await identify();
    // Under CURVE the event streams carry the token in their address: open them again.
    if (cohort.who.tokenNeeded) { location.reload(); return; }
    onChange();
  });
}

// ---- groups -----------------------------------------------------------------

const groupsPage = { offset: 0, limit: 25, timer: null };

async function loadGroups() {
  const state = document.getElementById("filter-state").value;
  const name = document.getElementById("filter-name").value.trim();
  const query = new URLSearchParams({ limit: groupsPage.limit, offset: groupsPage.offset });
  if (state) query.set("state", state);
  // The coordinator's glob (as `cohort status --name`); plain text finds names containing it.
  if (name) query.set("name", /[*?[]/.test(name) ? name : "*" + name + "*");
  try {
    const list = await api("/api/groups?" + query);
    const body = document.querySelector("#groups tbody");
    body.replaceChildren(...list.groups.map((group) => {
      const progress = group.progress || { finished: 0, total: 0 };
      const percent = progress.total ? Math.round(100 * progress.finished / progress.total) : 0;
      return el("tr", { dataset: { group: group.id, state: group.state } },
        el("td", {}, el("a", { href: "/group?id=" + encodeURIComponent(group.id) }, group.name)),
        el("td", { class: "muted" }, group.id),
        el("td", {}, badge(group.state)),
        el("td", {}, el("span", { class: "bar" }, el("span", { style: "width:" + percent + "%" })),
          " " + progress.finished + "/" + progress.total),
        el("td", {}, clock(group.submittedAt)),
        el("td", { class: "age", dataset: { time: group.submittedAt } }, ago(group.submittedAt)));
    }));
    if (list.groups.length === 0) body.append(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No groups.")));
    const counts = Object.entries(list.counts).filter(([, n]) => n > 0).map(([s, n]) => n + " " + s);
    document.getElementById("counts").textContent = counts.join(" · ");
    const last = list.offset + list.groups.length;
    document.getElementById("page").textContent = list.groups.length === 0 ? ""
      : (list.offset + 1) + "–" + last + (list.more ? " of more" : " of " + list.total);
    document.getElementById("prev").disabled = list.offset === 0;
    document.getElementById("next").disabled = !list.more;
    message("");
  } catch (error) {
    message("Cannot list groups: " + error.message);
  }
}

function scheduleGroups() {
  clearTimeout(groupsPage.timer);
  groupsPage.timer = setTimeout(loadGroups, 150);
}

function startGroupsPage() {
  document.getElementById("nav-groups").classList.add("here");
  const params = new URLSearchParams(location.search);
  if (params.get("state")) document.getElementById("filter-state").value = params.get("state");
  if (params.get("name")) document.getElementById("filter-name").value = params.get("name");
  document.getElementById("filter-state").addEventListener("change", () => { groupsPage.offset = 0; loadGroups(); });
  document.getElementById("filter-name").addEventListener("input", () => { groupsPage.offset = 0; scheduleGroups(); });
  document.getElementById("prev").addEventListener("click", () => {
    groupsPage.offset = Math.max(0, groupsPage.offset - groupsPage.limit); loadGroups();
  });
  document.getElementById("next").addEventListener("click", () => { groupsPage.offset += groupsPage.limit; loadGroups(); });
  setupToken(loadGroups);
  loadGroups();
  const events = new EventSource(streamURL("/api/events"));
  events.addEventListener("groups", scheduleGroups);
  setInterval(() => {
    for (const cell of document.querySelectorAll("td.age")) cell.textContent = ago(cell.dataset.time);
  }, 1000);
}

// ---- one group ----------------------------------------------------------------

const groupPage = {
  id: null, group: null, children: new Map(), index: new Map(), selected: null, events: null, detailRenders: 0,
  renderTimer: null, redrawGraph: false,
};

function parentPath(path) {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

// A layered layout, computed per container (the group, then each nested group, drawn as a
// box around its children): a child's column is one more than that of the siblings it
// waits for; columns go left to right, a column's nodes top to bottom.
const NODE = { width: 150, height: 40, gapX: 46, gapY: 14, pad: 14, title: 20 };

function layout(containerPath, byParent) {
  const members = byParent.get(containerPath) || [];
  const siblingOf = (path) => members.find((m) => path === m.path || path.startsWith(m.path + "/"));
  const column = new Map();
  const columnOf = (child, seen) => {
    if (column.has(child.path)) return column.get(child.path);
    if (seen.has(child.path)) return 0;
    seen.add(child.path);
    let value = 0;
    for (const dependency of child.dependsOn) {
      const sibling = siblingOf(dependency);
      if (sibling && sibling !== child) value = Math.max(value, columnOf(sibling, seen) + 1);
    }
    column.set(child.path, value);
    return value;
  };
  const sizes = new Map();
  for (const child of members) {
    columnOf(child, new Set());
    if (child.isGroup) {
      const inner = layout(child.path, byParent);
      sizes.set(child.path, {
        width: Math.max(NODE.width, inner.width + 2 * NODE.pad),
        height: inner.height + 2 * NODE.pad + NODE.title, inner,
      });
    } else {
      sizes.set(child.path, { width: NODE.width, height: NODE.height });
    }
  }
  const columns = [];
  for (const child of members) {
    const index = column.get(child.path);
    (columns[index] = columns[index] || []).push(child);
  }
  const placed = [];
  let x = 0;
  let height = 0;
  for (const nodes of columns) {
    if (!nodes) continue;
    const width = Math.max(...nodes.map((n) => sizes.get(n.path).width));
    let y = 0;
    for (const node of nodes) {
      const size = sizes.get(node.path);
      placed.push({ child: node, x, y, width: size.width, height: size.height, inner: size.inner });
      y += size.height + NODE.gapY;
    }
    height = Math.max(height, y - NODE.gapY);
    x += width + NODE.gapX;
  }
  return { placed, width: Math.max(0, x - NODE.gapX), height: Math.max(0, height) };
}

function drawGraph() {
  const group = groupPage.group;
  const byParent = new Map();
  for (const child of group.children) {
    const parent = parentPath(child.path);
    if (!byParent.has(parent)) byParent.set(parent, []);
    byParent.get(parent).push(child);
  }
  const root = layout("", byParent);
  const positions = new Map();
  const nodes = [];
  const place = (result, offsetX, offsetY) => {
    for (const item of result.placed) {
      const x = offsetX + item.x;
      const y = offsetY + item.y;
      positions.set(item.child.path, { x, y, width: item.width, height: item.height });
      const common = {
        "data-path": item.child.path, "data-state": item.child.state,
        onclick: (event) => { event.stopPropagation(); select(item.child.path); },
      };
      if (item.child.isGroup) {
        nodes.push(svg("g", Object.assign({ class: "box" }, common),
          svg("rect", { x, y, width: item.width, height: item.height }),
          svg("rect", { class: "fill", x: x + 6, y: y + 6, width: 10, height: 10, rx: 2 }),
          svg("text", { x: x + 22, y: y + 15 }, item.child.name + " · " + item.child.state)));
        place(item.inner, x + NODE.pad, y + NODE.pad + NODE.title);
      } else {
        const label = item.child.name.length > 20 ? item.child.name.slice(0, 19) + "…" : item.child.name;
        nodes.push(svg("g", Object.assign({ class: "node" }, common),
          svg("rect", { class: "fill", x, y, width: item.width, height: item.height }),
          svg("text", { class: "label", x: x + 8, y: y + 17 }, label),
          svg("text", { class: "sub", x: x + 8, y: y + 31 }, item.child.kind + " · " + item.child.state)));
      }
    }
  };
  place(root, 10, 10);
  const edges = [];
  for (const child of group.children) {
    const to = positions.get(child.path);
    for (const dependency of child.dependsOn) {
      const from = positions.get(dependency);
      if (!from || !to) continue;
      const x1 = from.x + from.width, y1 = from.y + Math.min(from.height / 2, 20);
      const x2 = to.x, y2 = to.y + Math.min(to.height / 2, 20);
      const bend = Math.max(20, (x2 - x1) / 2);
      edges.push(svg("path", {
        class: "edge", "data-from": dependency, "data-to": child.path,
        d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
      }));
    }
  }
  const picture = svg("svg", { width: root.width + 20, height: root.height + 20, id: "graph-svg" },
    svg("defs", {}, svg("marker", {
      id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto",
    }, svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#667085" }))),
    ...edges, ...nodes);
  document.getElementById("graph").replaceChildren(picture);
  markSelected();
}

function updateNode(child) {
  const node = document.querySelector(`#graph-svg [data-path="${CSS.escape(child.path)}"]`);
  if (!node) return drawGraph();
  node.setAttribute("data-state", child.state);
  const texts = node.querySelectorAll("text");
  if (child.isGroup) texts[0].textContent = child.name + " · " + child.state;
  else if (texts[1]) texts[1].textContent = child.kind + " · " + child.state;
}

function markSelected() {
  for (const node of document.querySelectorAll("#graph-svg .selected")) node.classList.remove("selected");
  if (!groupPage.selected) return;
  const node = document.querySelector(`#graph-svg [data-path="${CSS.escape(groupPage.selected)}"]`);
  if (node) node.classList.add("selected");
}

function renderHeader() {
  const group = groupPage.group;
  document.title = group.name + " · Cohort";
  document.getElementById("group-name").textContent = group.name;
  const state = document.getElementById("group-state");
  state.textContent = group.state;
  state.className = "badge s-" + group.state;
  state.dataset.state = group.state;
  const procedures = group.children.filter((c) => !c.isGroup);
  const finished = procedures.filter((c) => ["succeeded", "failed", "cancelled", "skipped"].includes(c.state)).length;
  document.getElementById("group-progress").textContent = finished + "/" + procedures.length + " finished";
  document.getElementById("group-id").textContent = group.id;
  document.getElementById("group-submitted").textContent = clock(group.submittedAt);
  document.getElementById("group-finished").textContent = group.finishedAt ? "· finished " + clock(group.finishedAt) : "";
  document.getElementById("group-reason").textContent = group.reason ? "· " + group.reason : "";
  const finishedGroup = ["succeeded", "failed", "cancelled", "skipped"].includes(group.state);
  document.getElementById("cancel-group").hidden = !cohort.who.may.cancel || finishedGroup;
}

function cancelButton(path) {
  return el("button", {
    class: "danger cancel-child", dataset: { path },
    onclick: (event) => { event.stopPropagation(); cancel(path); },
  }, "Cancel");
}

function renderTable() {
  const body = document.querySelector("#children tbody");
  body.replaceChildren(...groupPage.group.children.map((child) => {
    const finished = ["succeeded", "failed", "cancelled", "skipped"].includes(child.state);
    return el("tr", { dataset: { path: child.path, state: child.state }, onclick: () => select(child.path) },
      el("td", {}, child.path),
      el("td", { class: "muted" }, child.isGroup ? "group" : child.kind),
      el("td", {}, badge(child.state)),
      el("td", {}, child.worker || ""),
      el("td", {}, child.attempt || ""),
      el("td", {}, clock(child.startedAt)),
      el("td", {}, took(child.startedAt, child.finishedAt)),
      el("td", {}, child.error || child.waitingReason || ""),
      el("td", {}, cohort.who.may.cancel && !finished ? cancelButton(child.path) : ""));
  }));
}

async function renderDetail() {
  const box = document.getElementById("detail");
  const child = groupPage.children.get(groupPage.selected);
  const render = ++groupPage.detailRenders;
  if (!child) { box.replaceChildren(el("p", { class: "muted" }, "Select a child in the graph or the table.")); return; }
  const facts = [
    ["path", child.path], ["kind", child.isGroup ? "nested group" : child.kind], ["state", badge(child.state)],
    ["attempt", child.isGroup ? "" : String(child.attempt)], ["worker", child.worker || ""],
    ["depends on", child.dependsOn.join(", ")],
    ["started", clock(child.startedAt)], ["finished", clock(child.finishedAt)],
    ["took", took(child.startedAt, child.finishedAt)],
    ["waiting for", child.waitingReason || ""], ["error", child.error || ""],
  ].filter(([, value]) => value !== "");
  const finished = ["succeeded", "failed", "cancelled", "skipped"].includes(child.state);
  const parts = [
    el("h2", {}, child.name),
    el("dl", { class: "facts" }, ...facts.flatMap(([key, value]) => [el("dt", {}, key), el("dd", {}, value)])),
  ];
  if (cohort.who.may.cancel && !finished) parts.push(el("p", {}, cancelButton(child.path)));
  parts.push(...renderAttempts(child));
  box.replaceChildren(...parts);
  if (child.state === "succeeded" && !child.isGroup) {
    const link = "/api/groups/" + encodeURIComponent(groupPage.id) + "/result?child=" + encodeURIComponent(child.path);
    try {
      const result = await api(link);
      // Another child selected (or this one drawn again) while the output came: not here.
      if (groupPage.selected !== child.path || groupPage.detailRenders !== render) return;
      const text = JSON.stringify(result.output, null, 2);
      const shown = text.length > 4000 ? text.slice(0, 4000) + "\n… (" + text.length + " characters in all)" : text;
      box.append(el("h2", {}, "Output"), el("pre", { class: "output" }, shown),
        el("p", {}, el("a", { href: link, target: "_blank" }, "the whole result (JSON)"),
          result.outputTruncated ? el("span", { class: "muted" }, " · cut down by the coordinator's maxOutputBytes") : ""));
    } catch (error) {
      if (groupPage.selected !== child.path || groupPage.detailRenders !== render) return;
      box.append(el("p", { class: "muted" }, "Output: " + error.message));
    }
  }
}

// A child's earlier attempts (those that reached a worker and were followed by another),
// oldest first: a heading and a table, or nothing for a child that ran once.
function renderAttempts(child) {
  const earlier = child.earlierAttempts || [];
  if (earlier.length === 0) return [];
  const head = el("tr", {}, ...["attempt", "worker", "started", "finished", "took", "ended", "error"].map((name) => el("th", {}, name)));
  const rows = earlier.map((attempt) => el("tr", {},
    el("td", {}, String(attempt.attempt)), el("td", {}, attempt.worker),
    el("td", {}, clock(attempt.startedAt)), el("td", {}, clock(attempt.finishedAt)),
    el("td", {}, took(attempt.startedAt, attempt.finishedAt)), el("td", {}, attempt.outcome),
    el("td", {}, attempt.error)));
  return [el("h2", {}, "Earlier attempts"), el("table", { class: "attempts" }, el("thead", {}, head), el("tbody", {}, ...rows))];
}

function select(path) {
  groupPage.selected = path;
  markSelected();
  renderDetail();
  openLog(path);
}

async function cancel(path) {
  const what = path ? "child " + path : "group " + groupPage.group.name;
  if (!window.confirm("Cancel " + what + "?")) return;
  try {
    await post("/api/groups/" + encodeURIComponent(groupPage.id) + "/cancel", path ? { child: path } : {});
    message("Cancel of " + what + " accepted.", "ok");
  } catch (error) {
    message("Cannot cancel " + what + ": " + error.message);
  }
}

function applySnapshot(group) {
  groupPage.group = group;
  groupPage.children = new Map(group.children.map((child) => [child.path, child]));
  groupPage.index = new Map(group.children.map((child, index) => [child.path, index]));
  renderHeader();
  drawGraph();
  renderTable();
  renderDetail();
}

function applyChild(child) {
  const group = groupPage.group;
  const known = groupPage.children.has(child.path);
  groupPage.children.set(child.path, child);
  if (!known) {
    // A child added while the group runs (`cohort add`, a map's procedure): a new node in the
    // graph, at the end of its group.
    insertChild(group.children, child);
    groupPage.index = null;
    scheduleRender(true);
  } else {
    if (!groupPage.index) groupPage.index = new Map(group.children.map((c, i) => [c.path, i]));
    group.children[groupPage.index.get(child.path)] = child;
    updateNode(child);
    scheduleRender(false);
  }
  if (groupPage.selected === child.path) renderDetail();
  if (logPanel.path === child.path) renderAttemptChoice(child);
}

// After the last child inside the new child's group (found from the end in a few steps:
// additions go at the end of their group), or at the end for the top level.
function insertChild(children, child) {
  const slash = child.path.lastIndexOf("/");
  if (slash < 0) {
    children.push(child);
    return;
  }
  const parent = child.path.slice(0, slash);
  let at = children.length;
  for (let i = children.length - 1; i >= 0; i--) {
    const path = children[i].path;
    if (path === parent || path.startsWith(parent + "/")) {
      at = i + 1;
      break;
    }
  }
  children.splice(at, 0, child);
}

// The header and the table (and the graph, when children were added) are drawn again at most
// every 100 ms, not per event: a fan-out of thousands of children sends thousands of events.
function scheduleRender(graph) {
  groupPage.redrawGraph = groupPage.redrawGraph || graph;
  if (groupPage.renderTimer) return;
  groupPage.renderTimer = setTimeout(() => {
    groupPage.renderTimer = null;
    if (groupPage.redrawGraph) {
      groupPage.redrawGraph = false;
      drawGraph();
    }
    renderHeader();
    renderTable();
  }, 100);
}

function follow() {
  if (groupPage.events) groupPage.events.close();
  const live = document.getElementById("live");
  const events = new EventSource(streamURL("/api/groups/" + encodeURIComponent(groupPage.id) + "/events"));
  groupPage.events = events;
  events.addEventListener("open", () => { live.textContent = "live"; });
  events.addEventListener("snapshot", (event) => applySnapshot(JSON.parse(event.data)));
  events.addEventListener("child", (event) => applyChild(JSON.parse(event.data).child));
  events.addEventListener("finished", async (event) => {
    events.close();
    live.textContent = "finished";
    const end = JSON.parse(event.data);
    try { applySnapshot(await api("/api/groups/" + encodeURIComponent(groupPage.id))); } catch (e) {
      groupPage.group.state = end.state;
      renderHeader();
    }
  });
  events.addEventListener("error", (event) => {
    if (event.data) {
      const error = JSON.parse(event.data).error;
      // A coordinator stopping (to restart, say): the browser reconnects by itself.
      if (error.code === "unavailable") { live.textContent = "reconnecting…"; return; }
      events.close();
      message(error.message);
    } else if (events.readyState !== EventSource.CLOSED) {
      live.textContent = "reconnecting…";
    }
  });
}

// ---- a child's log ----------------------------------------------------------------
// The panel under the graph shows the selected child's log: its last LOG_TAIL lines at once,
// then what it writes, live (GET /api/groups/ID/logs?follow=1, Server-Sent Events). Each
// `lines` event's id (ATTEMPT:SEQUENCE) lets a reconnecting browser carry on after its last
// line, and Resume after Pause does the same: no line is lost or shown twice. Earlier lines
// load on demand, LOG_TAIL at a time, newest first.

const LOG_TAIL = 500;
const LOG_MAX_LINES = 20000;
const logPanel = {
  path: null, attempt: 0, events: null, paused: false, ended: false, generation: 0,
  shown: 0, last: 0, firstAttempt: 0, first: 0, count: 0, open: null,
};

// Where a follower carries on: after the last line shown of the attempt shown (`2:0`: from
// the first line of attempt 2, announced but not yet heard from); null before any.
function logResumePoint() {
  return logPanel.shown ? logPanel.shown + ":" + logPanel.last : null;
}

function logURL(params) {
  return "/api/groups/" + encodeURIComponent(groupPage.id) + "/logs?" + new URLSearchParams(params);
}

function logStatus(text) { document.getElementById("log-status").textContent = text; }

// Control characters (but tab) as ^X: a child's bytes cannot change how the page looks.
function printable(text) {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f]/g,
    (c) => (c === "\x7f" ? "^?" : "^" + String.fromCharCode(c.charCodeAt(0) + 64)));
}

function logLine(line, attempt) {
  const prefix = line.stream === "kind" ? "[" + line.level + "] " : "";
  return el("span", {
    class: "line " + line.stream + (line.partial ? " partial" : ""),
    dataset: { seq: String(line.sequence), attempt: String(attempt) },
  }, prefix + printable(line.text) + (line.partial ? "" : "\n"));
}

function openLog(path) {
  const child = groupPage.children.get(path);
  const panel = document.getElementById("log-panel");
  if (logPanel.path === path && !panel.hidden) return;
  stopLog();
  logPanel.path = child && !child.isGroup ? path : null;
  panel.hidden = !logPanel.path;
  if (!logPanel.path) return;
  logPanel.attempt = 0;
  document.getElementById("log-child").textContent = path;
  renderAttemptChoice(child);
  resetLog();
  startLog(null);
}

// The attempts to choose from: the latest (followed across retries), then each by number.
function renderAttemptChoice(child) {
  const choice = document.getElementById("log-attempt");
  const options = [el("option", { value: "0" }, "latest")];
  for (let n = 1; n <= (child.attempt || 0); n++) options.push(el("option", { value: String(n) }, String(n)));
  if (choice.options.length === options.length) return;
  choice.replaceChildren(...options);
  choice.value = String(logPanel.attempt);
}

function resetLog() {
  logPanel.generation++;
  document.getElementById("log-lines").replaceChildren();
  Object.assign(logPanel, { shown: 0, last: 0, firstAttempt: 0, first: 0, count: 0, open: null, ended: false });
  document.querySelector("#log-panel .log-earlier").hidden = true;
  document.getElementById("log-earlier-note").textContent = "";
  document.getElementById("log-pause").textContent = "Pause";
  document.getElementById("log-pause").disabled = false;
  logPanel.paused = false;
}

function stopLog() {
  if (logPanel.events) logPanel.events.close();
  logPanel.events = null;
}

// Follows the log: from its last LOG_TAIL lines, or after `from` (ATTEMPT:SEQUENCE).
function startLog(from) {
  stopLog();
  const params = { child: logPanel.path, follow: "1" };
  if (logPanel.attempt) params.attempt = String(logPanel.attempt);
  if (from) params.from = from; else params.tail = String(LOG_TAIL);
  if (cohort.token) params.token = cohort.token;
  const events = new EventSource(logURL(params));
  logPanel.events = events;
  logStatus("connecting…");
  events.addEventListener("open", () => logStatus("live"));
  events.addEventListener("waiting", (event) => {
    logStatus("waiting for the child to start (" + JSON.parse(event.data).state + ")");
  });
  events.addEventListener("attempt", (event) => {
    const data = JSON.parse(event.data);
    // A resumed stream names the attempt it carries on in again: no separator for it.
    if (data.attempt < logPanel.shown) return;
    if (logPanel.shown && data.attempt !== logPanel.shown) {
      appendLog([{ stream: "cohort", text: "attempt " + logPanel.shown + " ended; attempt " + data.attempt
        + (data.worker ? " on " + data.worker : "") + " follows", sequence: 0, partial: false }], 0);
    }
    if (data.attempt !== logPanel.shown) logPanel.last = 0;
    logPanel.shown = data.attempt;
    logStatus("live · attempt " + data.attempt + (data.worker ? " on " + data.worker : ""));
  });
  events.addEventListener("lines", (event) => {
    const data = JSON.parse(event.data);
    appendLog(data.lines, data.attempt);
  });
  events.addEventListener("ended", (event) => {
    const page = JSON.parse(event.data);
    events.close();
    logPanel.ended = true;
    document.getElementById("log-pause").disabled = true;
    logStatus("attempt " + page.attempt + " ended · " + page.state + (page.error ? ": " + page.error : ""));
    if (page.cutBytes > 0) {
      document.getElementById("log-earlier-note").textContent =
        page.cutBytes + " bytes were cut from the middle of this log (maxLogBytes)";
    }
  });
  events.addEventListener("error", (event) => {
    if (event.data) {
      const error = JSON.parse(event.data).error;
      if (error.code === "unavailable") { logStatus("reconnecting…"); return; }
      events.close();
      logStatus("log: " + error.message);
    } else if (events.readyState !== EventSource.CLOSED) {
      logStatus("reconnecting…");
    } else if (logPanel.events === events && !logPanel.paused && !logPanel.ended) {
      // The browser gave up (an answer that was not a stream: the coordinator was away):
      // try again after a while, from the last line shown.
      logStatus("reconnecting…");
      const generation = logPanel.generation;
      setTimeout(() => {
        if (logPanel.events === events && logPanel.generation === generation && !logPanel.paused) {
          startLog(logResumePoint());
        }
      }, 2000);
    }
  });
}

// Appends lines of `attempt` at the bottom; keeps the view at the bottom if it was there.
function appendLog(lines, attempt) {
  const box = document.getElementById("log-lines");
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  const fragment = document.createDocumentFragment();
  for (const line of lines) {
    fragment.append(logLine(line, attempt));
    if (!attempt) continue;
    if (!logPanel.first) {
      logPanel.first = line.sequence;
      logPanel.firstAttempt = attempt;
    }
    logPanel.last = line.sequence;
    logPanel.count++;
  }
  box.append(fragment);
  // A log longer than the page keeps: its oldest lines go (Load earlier brings them back),
  // while the view follows the end (not while someone reads further up).
  while (atBottom && logPanel.count > LOG_MAX_LINES && box.firstChild) {
    if (box.firstChild.dataset.attempt !== "0") logPanel.count--;
    box.firstChild.remove();
    const top = box.querySelector('span.line:not([data-attempt="0"])');
    if (top) { logPanel.first = Number(top.dataset.seq); logPanel.firstAttempt = Number(top.dataset.attempt); }
  }
  document.querySelector("#log-panel .log-earlier").hidden = !(logPanel.first > 1);
  if (atBottom) box.scrollTop = box.scrollHeight;
}

// The LOG_TAIL lines before the first one shown, at the top.
async function loadEarlierLog() {
  if (!(logPanel.first > 1)) return;
  const path = logPanel.path;
  const attempt = logPanel.firstAttempt;
  const before = logPanel.first;
  const generation = logPanel.generation;
  try {
    const page = await api(logURL({ child: path, attempt: String(attempt), before: String(before), tail: String(LOG_TAIL) }));
    if (logPanel.generation !== generation || logPanel.first !== before || logPanel.firstAttempt !== attempt) return;
    const box = document.getElementById("log-lines");
    const height = box.scrollHeight;
    const lines = page.lines.filter((line) => line.sequence < before);
    const fragment = document.createDocumentFragment();
    for (const line of lines) fragment.append(logLine(line, attempt));
    box.prepend(fragment);
    logPanel.count += lines.length;
    logPanel.first = lines.length ? lines[0].sequence : 1;
    box.scrollTop += box.scrollHeight - height;
    document.querySelector("#log-panel .log-earlier").hidden = !(logPanel.first > 1);
    if (page.cutBytes > 0) {
      document.getElementById("log-earlier-note").textContent =
        page.cutBytes + " bytes were cut from the middle of this log (maxLogBytes)";
    }
  } catch (error) {
    logStatus("earlier lines: " + error.message);
  }
}

function toggleLogPause() {
  const button = document.getElementById("log-pause");
  if (logPanel.ended) return;
  if (!logPanel.paused) {
    stopLog();
    logPanel.paused = true;
    button.textContent = "Resume";
    logStatus("paused");
    return;
  }
  logPanel.paused = false;
  button.textContent = "Pause";
  // After the last line shown: what was written meanwhile comes now, once.
  startLog(logResumePoint());
}

function setupLogPanel() {
  document.getElementById("log-earlier").addEventListener("click", loadEarlierLog);
  document.getElementById("log-pause").addEventListener("click", toggleLogPause);
  document.getElementById("log-attempt").addEventListener("change", (event) => {
    logPanel.attempt = Number(event.target.value);
    resetLog();
    startLog(null);
  });
}

function startGroupPage() {
  groupPage.id = new URLSearchParams(location.search).get("id");
  if (!groupPage.id) { message("No group: open /group?id=GROUP."); return; }
  document.getElementById("cancel-group").addEventListener("click", () => cancel(null));
  setupLogPanel();
  setupToken(() => { if (groupPage.group) { renderHeader(); renderTable(); renderDetail(); } });
  follow();
  setInterval(() => {
    if (!groupPage.group) return;
    for (const row of document.querySelectorAll('#children tr[data-state="running"]')) {
      const child = groupPage.children.get(row.dataset.path);
      if (child) row.children[6].textContent = took(child.startedAt, child.finishedAt);
    }
  }, 1000);
}

// ---- workers and locks --------------------------------------------------------

const workersPage = { workers: [] };

function renderWorkers() {
  const body = document.querySelector("#workers tbody");
  body.replaceChildren(...workersPage.workers.map((worker) => el("tr", { dataset: { worker: worker.name, state: worker.state } },
    el("td", {}, worker.name, el("div", { class: "muted" }, worker.id)),
    el("td", {}, worker.host),
    el("td", {}, worker.labels.join(", ")),
    el("td", { class: "muted" }, worker.kinds.join(", ")),
    el("td", {}, el("span", { class: "bar" },
      el("span", { style: "width:" + (worker.slots ? Math.round(100 * Math.min(worker.running, worker.slots) / worker.slots) : 0) + "%" })),
      " " + worker.running + "/" + worker.slots),
    el("td", {}, badge(worker.state)),
    el("td", { class: "age", dataset: { time: worker.lastHeardAt || "" } }, ago(worker.lastHeardAt)),
    el("td", {}, ...worker.attempts.map((attempt) => el("div", {},
      el("a", { href: "/group?id=" + encodeURIComponent(attempt.group) }, attempt.groupName),
      " / " + attempt.child + " (attempt " + attempt.attempt + ", " + took(attempt.startedAt) + ")"))),
    el("td", {}, cohort.who.may.drain && worker.state === "ready"
      ? el("button", { class: "danger drain", onclick: () => drain(worker.name) }, "Drain") : ""))));
  if (workersPage.workers.length === 0) body.append(el("tr", {}, el("td", { colspan: 9, class: "muted" }, "No workers.")));
}

function renderLocks(locks) {
  const body = document.querySelector("#locks tbody");
  const ref = (group, child) => el("span", {},
    el("a", { href: "/group?id=" + encodeURIComponent(group) }, group), child ? " / " + child : "");
  const holders = (lock) => lock.holders || (lock.holder ? [lock.holder] : []);
  body.replaceChildren(...locks.map((lock) => el("tr", { dataset: { category: lock.category } },
    el("td", {}, lock.category),
    el("td", { class: "held" }, holders(lock).length + "/" + (lock.limit || 1)),
    el("td", {}, String(lock.token)),
    el("td", {}, holders(lock).length
      ? el("ul", {}, ...holders(lock).map((holder) => el("li", {}, [ref(holder.group, holder.child),
        holder.groupHold ? " (group hold" : " (attempt " + holder.attempt + (holder.worker ? " on " + holder.worker : ", waiting for a slot"),
        holder.token == null ? "" : ", token " + holder.token,
        holder.heldSeconds == null ? ")" : ", held " + holder.heldSeconds.toFixed(1) + " s)"])))
      : el("span", { class: "muted" }, "free")),
    el("td", {}, el("ol", {}, ...lock.waiters.map((waiter) => el("li", {}, [ref(waiter.group, waiter.child),
      waiter.waitingSeconds == null ? "" : " (waiting " + waiter.waitingSeconds.toFixed(1) + " s)"])))))));
  if (locks.length === 0) body.append(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "No locks held or waited for.")));
}

async function drain(name) {
  if (!window.confirm("Drain worker " + name + "? It takes no new work; what runs there finishes.")) return;
  try {
    await post("/api/workers/" + encodeURIComponent(name) + "/drain");
    message("Worker " + name + " drains.", "ok");
  } catch (error) {
    message("Cannot drain " + name + ": " + error.message);
  }
}

async function loadWorkers() {
  try {
    workersPage.workers = (await api("/api/workers")).workers;
    renderWorkers();
    renderLocks((await api("/api/locks")).locks);
  } catch (error) {
    message("Cannot list workers and locks: " + error.message);
  }
}

function startWorkersPage() {
  document.getElementById("nav-workers").classList.add("here");
  setupToken(renderWorkers);
  loadWorkers();
  const events = new EventSource(streamURL("/api/events"));
  events.addEventListener("workers", (event) => { workersPage.workers = JSON.parse(event.data).workers; renderWorkers(); });
  events.addEventListener("locks", (event) => renderLocks(JSON.parse(event.data).locks));
  setInterval(() => {
    for (const cell of document.querySelectorAll("td.age")) cell.textContent = ago(cell.dataset.time);
  }, 1000);
}

// ---- start --------------------------------------------------------------------

(async () => {
  await identify();
  const page = document.body.dataset.page;
  if (page === "groups") startGroupsPage();
  else if (page === "group") startGroupPage();
  else if (page === "workers") startWorkersPage();
})();
