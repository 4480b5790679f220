// SpatialScout episode viewer: steps through a run directory's trace call by call.
// Positions are task-frame metres (x forward, y left, z up); the map is top-down, x up, y left.
"use strict";
(function () {
  const D = window.EPISODE;
  const NS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const start = D.events.find((e) => e.event === "start") || {};
  const R = start.radius_m || 4.0;
  const S = 230 / R;
  const px = (p) => [250 - p[1] * S, 250 - p[0] * S];
  // One step per tool call (or wrapper refusal / model message); captures attach to the last step.
  const steps = [];
  let pose = { position: [0, 0, 0], yaw_deg: 0 };
  let frame = 0;
  let tris = [];
  let accepted = {};
  const poses = [pose];
  for (const e of D.events) {
    if (e.event === "capture") {
      frame = e.frame_id;
      if (e.pose_task) { pose = e.pose_task; poses.push(pose); }
      if (steps.length) { steps[steps.length - 1].frame = frame; steps[steps.length - 1].poses = poses.slice(); }
      continue;
    }
    if (e.event === "start" || e.event === "end" || e.event === "map") continue;
    const res = (e.result || {});
    const inner = res.result || {};
    const step = { e, frame, poses: poses.slice(), flags: [], obs: [] };
    if (e.event === "tool_call") {
      step.label = e.tool;
      step.ok = !!res.ok;
      if (!step.ok) step.flags.push("refused");
      if (e.tool === "triangulate_observations") {
        step.obs = ((e.args || {}).observations || []);
        if (step.obs.length) step.frame = step.obs[0].frame_id;
        if (step.ok && inner.point) {
          tris = tris.concat([{ p: inner.point, warn: (inner.warnings || []).length > 0, obs: step.obs }]);
          if ((inner.warnings || []).length) step.flags.push("warning");
        }
      }
      if (e.tool === "submit_positions" && step.ok && inner.accepted_map) accepted = inner.accepted_map;
    } else {
      step.label = e.event;
      step.ok = true;
    }
    step.tris = tris;
    step.accepted = accepted;
    steps.push(step);
  }
  const truth = D.truth || {};
  const out = D.outcome || {};
  const res = D.result || {};

  // header
  $("title").textContent = `${res.scene_id || "?"} \u00b7 ${res.agent || "?"} \u00b7 seed ${res.seed ?? "?"}`;
  const fmt = (x, d = 3) => (typeof x === "number" ? x.toFixed(d) : "\u2013");
  $("summary").innerHTML = `<span>${steps.length} calls</span><span>${Object.keys(D.frames).length} frames</span>`
    + `<span>end: ${res.end_reason || res.status || "?"}</span>`
    + `<span id="score" hidden>all-target mean IoU ${fmt((res.all || {}).mean_iou)} &middot; coverage ${fmt(res.coverage, 2)}</span>`;
  const factors = out.factors || [];
  $("factors").innerHTML = (out.success === undefined ? "" :
    `<span class="factor ${out.success ? "good" : "bad"}" id="factor-outcome">${out.success ? "success" : "failure"}</span>`)
    + factors.map((f) => `<span class="factor ${out.success ? "good" : "bad"}" title="${f}">${(out.labels || {})[f] || f}</span>`).join("");

  // call list
  const list = $("calls");
  steps.forEach((s, i) => {
    const li = document.createElement("li");
    li.dataset.i = i;
    if (!s.ok) li.className = "refused";
    li.innerHTML = `<span class="n">${i}</span>${s.label}${s.flags.length ? ` <span class="flag">\u25cf ${s.flags.join(",")}</span>` : ""}`;
    li.onclick = () => show(i);
    list.appendChild(li);
  });

  function el(tag, attrs, parent) {
    const n = document.createElementNS(NS, tag);
    for (const k in attrs) n.setAttribute(k, attrs[k]);
    parent.appendChild(n);
    return n;
  }

  let cur = 0;
  let showTruth = false;
  function drawMap(s) {
    const m = $("map");
    m.innerHTML = "";
    el("circle", { cx: 250, cy: 250, r: R * S, fill: "#eef2f8", stroke: "#b9c4d6" }, m);  // search region
    el("line", { x1: 250, y1: 10, x2: 250, y2: 490, stroke: "#e2e6ee" }, m);
    el("line", { x1: 10, y1: 250, x2: 490, y2: 250, stroke: "#e2e6ee" }, m);
    el("text", { x: 255, y: 22, fill: "#99a", "font-size": 11 }, m).textContent = "+x";
    el("text", { x: 14, y: 245, fill: "#99a", "font-size": 11 }, m).textContent = "+y";
    if (showTruth) {
      for (const t of truth.targets || []) {
        const [cx, cy] = px(t.center);
        const w = Math.max(t.size[1] * S, 3), h = Math.max(t.size[0] * S, 3);
        el("rect", { x: cx - w / 2, y: cy - h / 2, width: w, height: h, fill: "none", stroke: "#b8452f", "stroke-width": 1.2, class: "gt-box" }, m);
        el("text", { x: cx + w / 2 + 2, y: cy, fill: "#b8452f", "font-size": 9 }, m).textContent = `${t.id} ${t.iou.toFixed(2)}`;
      }
    }
    const path = s.poses.map((p) => px(p.position).join(",")).join(" ");
    el("polyline", { points: path, fill: "none", stroke: "#2d5bd0", "stroke-width": 1.5, class: "cam-path" }, m);
    const p = s.poses[s.poses.length - 1];
    const [cx, cy] = px(p.position);
    const yaw = (p.yaw_deg || 0) * Math.PI / 180;
    el("line", { x1: cx, y1: cy, x2: cx - Math.sin(yaw) * 22, y2: cy - Math.cos(yaw) * 22, stroke: "#2d5bd0", "stroke-width": 3 }, m);
    el("circle", { cx, cy, r: 5, fill: "#2d5bd0", class: "camera" }, m);
    const last = s.e.tool === "triangulate_observations" ? s.tris[s.tris.length - 1] : null;
    for (const t of s.tris) {
      const [tx, ty] = px(t.p);
      if (t === last) {  // rays of the current triangulation: from each observing camera
        for (const o of t.obs) {
          const cap = D.events.find((e) => e.event === "capture" && e.frame_id === o.frame_id);
          if (cap && cap.pose_task) {
            const [ox, oy] = px(cap.pose_task.position);
            el("line", { x1: ox, y1: oy, x2: tx, y2: ty, stroke: "#e08a00", "stroke-dasharray": "4 3", class: "ray" }, m);
          }
        }
      }
      el("circle", { cx: tx, cy: ty, r: 3.5, fill: t.warn ? "#b8452f" : "#e08a00", class: "tri" }, m);
    }
    for (const [id, q] of Object.entries(s.accepted)) {
      const [ax, ay] = px(q);
      el("rect", { x: ax - 3.5, y: ay - 3.5, width: 7, height: 7, fill: "#2f8f4e", class: "acc" }, m).appendChild(
        Object.assign(document.createElementNS(NS, "title"), { textContent: id }));
    }
  }

  function drawFrame(s) {
    const src = D.frames[s.frame];
    $("frame").src = src || "";
    $("frame-title").textContent = `Frame ${s.frame}`;
    const mk = $("marks");
    const w = (start.intrinsics || {}).width || 512, h = (start.intrinsics || {}).height || 512;
    mk.setAttribute("viewBox", `0 0 ${w} ${h}`);
    mk.innerHTML = "";
    for (const t of s.tris) for (const o of t.obs) {
      if (o.frame_id !== s.frame) continue;
      const on = s.obs.includes(o);
      el("circle", { cx: o.u, cy: o.v, r: on ? 9 : 6, fill: "none", stroke: on ? "#ffcc00" : "#e08a00", "stroke-width": on ? 3 : 2, class: "mark" }, mk);
    }
  }

  function drawTable() {
    const tb = $("iou-table");
    tb.innerHTML = "";
    $("score").hidden = !showTruth;
    if (!showTruth) return;
    tb.innerHTML = "<tr><th>target</th><th>IoU</th><th>matched</th></tr>" + (truth.targets || []).map(
      (t) => `<tr><td>${t.id}</td><td>${t.iou.toFixed(3)}</td><td>${t.matched || "\u2013"}</td></tr>`).join("");
  }

  function show(i) {
    if (!steps.length) return;
    cur = Math.max(0, Math.min(steps.length - 1, i));
    const s = steps[cur];
    document.querySelectorAll("#calls li.sel").forEach((n) => n.classList.remove("sel"));
    const li = list.children[cur];
    li.classList.add("sel");
    li.scrollIntoView({ block: "nearest" });
    drawFrame(s);
    drawMap(s);
    $("detail").textContent = JSON.stringify({ args: s.e.args, result: s.e.result, text: s.e.text }, null, 1);
  }

  $("truth-toggle").onchange = (ev) => { showTruth = ev.target.checked; drawTable(); show(cur); };
  document.addEventListener("keydown", (ev) => {
    const k = ev.key;
    if (k === "ArrowRight" || k === "j") show(cur + 1);
    else if (k === "ArrowLeft" || k === "k") show(cur - 1);
    else if (k === "Home") show(0);
    else if (k === "End") show(steps.length - 1);
    else if (k === "t") { $("truth-toggle").click(); }
    else return;
    ev.preventDefault();
  });
  window.VIEWER = { steps, show, current: () => cur };
  show(0);
  document.body.dataset.ready = "1";
})();
