// The episode viewer: step through a run call by call (keys: left/right, Home/End, g = ground truth).
"use strict";
(function () {
  const D = window.SS_DATA, main = document.getElementById("main");
  document.getElementById("title").textContent = "SpatialScout \u2013 " + D.name;
  if (D.kind === "eval") return evalList();
  const R = D.result, ev = D.events, start = ev.find(e => e.event === "start") || {};
  const calls = ev.filter(e => e.event !== "start" && e.event !== "capture" && e.event !== "map");
  const imgs = {};
  for (const [fid, url] of Object.entries(D.frames)) { const im = new Image(); im.src = url; imgs[fid] = im; }
  let cur = 0, showGT = false;
  const all = R.all || {};
  // a model run has two numberings: model calls (M1, M2, ... in the list) and tool calls (0, 1, ...)
  const nTool = ev.filter(e => e.event === "tool_call").length;
  const nModel = ev.filter(e => e.event === "model_request").length;
  const counts = (nModel ? "model calls " + nModel + "  \u00b7  " : "") + "tool calls " + nTool;
  document.getElementById("summary").textContent = [R.agent, R.scene_id, R.status,
    "mean IoU " + SS.pct(all.mean_iou), "coverage " + SS.pct(R.coverage), counts,
    "end " + R.end_reason].join("  \u00b7  ");
  // the settings record (eval/settings_check.py: what was asked and what was sent)
  const settingsText = Object.entries(D.settings || {}).map(([k, v]) => k + ": " + (typeof v === "string" ? v : JSON.stringify(v))).join("  \u00b7  ");
  function label(e, i) {
    const m = typeof e.model_call_index === "number" ? "M" + (e.model_call_index + 1) + "  " : "";
    if (e.event === "tool_call") return (e.index != null ? e.index : "?") + "  " + e.tool;
    if (e.event === "model_request") return m + "model request";
    if (e.event === "model_response") return m + "model reply (" + ((e.tool_calls || []).length) + " tool call(s))";
    if (e.event === "tool_call_refused") return m + "refused " + ((e.call && e.call.name) || "tool call");
    return e.event === "end" ? "end" : m + e.event;
  }
  const fac = D.factors ? (D.factors.success ? '<span class="flag ok">success</span>' : '<span class="flag">not a success</span>') +
    D.factors.factors.map(f => '<span class="flag" data-factor="' + f + '">' + f.replace(/_/g, " ") + "</span>").join("") : "";
  main.innerHTML = (D.back ? '<a href="' + D.back + '">\u2190 all episodes</a>' : "") +
    (settingsText ? '<div class="panel" id="settings" style="margin-bottom:10px"><b>Settings:</b> ' + SS.esc(settingsText) + "</div>" : "") +
    '<div class="panel" style="margin-bottom:10px"><b>Table-4 factors:</b> ' + (fac || "none (failed run)") +
    ' <span class="muted">(\u2691 marks the calls where they arise; episode-level ones on the end row)</span></div>' +
    '<div class="grid"><div class="panel" id="calls"><h2>Calls <span class="muted">(' + counts +
    (nModel ? "; M = model call" : "") + ')</span></h2></div>' +
    '<div class="panel"><h2>Step <span id="ci"></span></h2><div class="controls"><button id="prev">\u2190 prev</button>' +
    '<button id="next">next \u2192</button><label><input type="checkbox" id="gt"> ground truth (g)</label></div>' +
    '<div id="refusal" class="err"></div><pre id="detail"></pre><h2>Frame <span id="fi"></span></h2><canvas id="frame"></canvas><div class="thumbs" id="obs"></div></div>' +
    '<div class="panel"><h2>Top-down map</h2><canvas id="map" width="400" height="400"></canvas>' + SS.legend +
    '<div id="gtt"></div></div></div>';
  const list = document.getElementById("calls");
  calls.forEach((e, i) => {
    const d = document.createElement("div");
    const bad = (e.event === "tool_call" && e.result && !e.result.ok) || e.event === "tool_call_refused";
    d.className = "call" + (bad ? " bad" : "") + (e.event === "end" ? " end" : ""); d.dataset.i = i;
    d.textContent = label(e, i);
    if (e.event !== "tool_call" && e.event !== "end") d.className += " model";
    const cf = D.factors && e.event === "tool_call" ? D.factors.calls[String(e.index)] : null;
    if (cf) { d.className += " flagged"; d.textContent += "  \u2691"; d.title = cf.join("; "); }
    if (e.event === "end" && D.factors) d.textContent += "  \u2691 " + D.factors.factors.length + " factor(s)";
    d.onclick = () => go(i); list.appendChild(d);
  });
  const pos = e => e.pose_task ? e.pose_task.position : null;
  function stateAt(i) {
    // every event up to calls[i] (inclusive) in trace order
    const upto = ev.indexOf(calls[i]);
    const path = [], points = [], rays = []; let accepted = {}, frame = "0", yaw = 0;
    for (let k = 0; k <= upto + 1 && k < ev.length; k++) {
      const e = ev[k];
      if (k === upto + 1 && e.event !== "capture") break;  // the capture a call produced belongs to it
      if (e.event === "capture") { path.push(pos(e)); yaw = e.pose_task.yaw_deg; frame = String(e.frame_id); }
      if (e.event === "tool_call" && e.result && e.result.ok) {
        const r = e.result.result || {};
        if (r.position && /camera/.test(e.tool)) { path.push(r.position); yaw = r.yaw_deg; }
        if (e.tool === "triangulate_observations" && r.point) {
          points.push({p: r.point, warn: (r.warnings || []).length > 0});
        }
      }
      if (e.event === "map") accepted = e.accepted_map;
    }
    return {path, points, rays, accepted, frame, yaw};
  }
  function go(i) {
    cur = Math.max(0, Math.min(calls.length - 1, i));
    const e = calls[cur], st = stateAt(cur);
    for (const c of list.children) if (c.dataset.i !== undefined) c.classList.toggle("cur", +c.dataset.i === cur);
    const sel = list.querySelector(".call.cur"); if (sel) sel.scrollIntoView({block: "nearest"});
    document.getElementById("ci").textContent = (cur + 1) + " / " + calls.length;
    const show = Object.assign({}, e); delete show.event;
    document.getElementById("detail").textContent = SS.readable(show);
    const cf = D.factors && e.event === "tool_call" ? D.factors.calls[String(e.index)] || [] : [];
    document.getElementById("refusal").innerHTML = (e.result && e.result.error ? SS.esc(e.result.error) : "") +
      cf.map(f => '<span class="flag">\u2691 ' + SS.esc(f) + "</span>").join("");
    let fid = st.frame, marks = [];
    const obs = document.getElementById("obs"); obs.innerHTML = "";
    if (e.tool === "triangulate_observations" && e.args && Array.isArray(e.args.observations)) {
      const byF = {};
      for (const o of e.args.observations) (byF[o.frame_id] = byF[o.frame_id] || []).push(o);
      const fids = Object.keys(byF); if (fids.length) { fid = fids[0]; marks = byF[fid]; }
      for (const f of fids) {
        const c = document.createElement("canvas"); c.title = "frame " + f;
        if (imgs[f]) draw(c, f, byF[f]);
        c.onclick = () => { draw(document.getElementById("frame"), f, byF[f]); document.getElementById("fi").textContent = f; };
        obs.appendChild(c);
      }
    }
    document.getElementById("fi").textContent = fid;
    draw(document.getElementById("frame"), fid, marks);
    SS.drawMap(document.getElementById("map"), {radius: start.radius_m, path: st.path, yaw: st.yaw,
      points: st.points, accepted: st.accepted, targets: showGT ? D.targets : null, labels: showGT});
    document.getElementById("gtt").innerHTML = showGT ? gtTable() : "";
  }
  function draw(c, fid, marks) {
    const im = imgs[fid]; if (!im) return;
    if (im.complete && im.naturalWidth) SS.drawFrame(c, im, marks); else im.addEventListener("load", () => SS.drawFrame(c, im, marks), {once: true});
  }
  function gtTable() {
    return '<table id="ioutable"><tr><th>target</th><th>IoU (%)</th><th>matched</th></tr>' + D.targets.map(t =>
      "<tr><td>" + SS.esc(t.id) + "</td><td>" + SS.pct(t.iou) + "</td><td>" + SS.esc(t.matched || "\u2013") + "</td></tr>").join("") + "</table>";
  }
  document.getElementById("prev").onclick = () => go(cur - 1);
  document.getElementById("next").onclick = () => go(cur + 1);
  const gt = document.getElementById("gt"); gt.onchange = () => { showGT = gt.checked; go(cur); };
  document.addEventListener("keydown", k => {
    if (k.key === "ArrowRight" || k.key === "j") go(cur + 1);
    else if (k.key === "ArrowLeft" || k.key === "k") go(cur - 1);
    else if (k.key === "Home") go(0);
    else if (k.key === "End") go(calls.length - 1);
    else if (k.key === "g") { gt.checked = !gt.checked; showGT = gt.checked; go(cur); }
    else return;
    k.preventDefault();
  });
  go(0);
  window.SS_VIEW = {go, get cur() { return cur; }, calls: calls.length};

  function evalList() {
    let rows = D.episodes.slice(), key = "mean_iou", dir = -1;
    document.getElementById("summary").textContent = rows.length + " episodes";
    function render() {
      rows.sort((a, b) => ((a[key] ?? -1) > (b[key] ?? -1) ? 1 : (a[key] ?? -1) < (b[key] ?? -1) ? -1 : 0) * dir);
      const cols = ["path", "scene", "agent", "status", "mean_iou", "coverage", "tool_calls"];
      main.innerHTML = '<div class="panel"><table id="episodes"><tr>' + cols.map(c => '<th data-k="' + c + '">' + c.replace("_", " ") + (c === "mean_iou" || c === "coverage" ? " (%)" : "") +
        (c === key ? (dir < 0 ? " \u25bc" : " \u25b2") : "") + "</th>").join("") + "</tr>" +
        rows.map(r => "<tr>" + cols.map(c => "<td>" + (c === "path" ? '<a href="' + r.href + '">' + SS.esc(r.path) + "</a>" :
          typeof r[c] === "number" && c !== "tool_calls" ? SS.pct(r[c]) : SS.esc(r[c] ?? "\u2013")) + "</td>").join("") + "</tr>").join("") + "</table></div>";
      for (const th of main.querySelectorAll("th")) th.onclick = () => { if (key === th.dataset.k) dir = -dir; else { key = th.dataset.k; dir = -1; } render(); };
    }
    render();
  }
})();
