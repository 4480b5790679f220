// The play page: every button is one tool call through POST /api/call (the episode's own entry point).
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  let state = null, shown = null, marks = [], path = [[0, 0, 0]], yaw = 0, points = [], accepted = {}, radius = null;  // the search region's radius: unknown until list_entities
  const token = new URLSearchParams(location.search).get("token") || "";
  const imgs = {};
  async function call(tool, args) {
    const r = await fetch("api/call", {method: "POST", headers: {"Content-Type": "application/json", "X-SpatialScout-Token": token},
                                       body: JSON.stringify({tool, args: args || {}})});
    if (!r.ok) { $("refusal").textContent = "the server refused the call: " + (await r.text()); return {ok: false}; }
    const out = await r.json(), res = out.result;
    $("refusal").textContent = res.ok ? "" : res.error;
    $("last").textContent = tool + " " + JSON.stringify(args || {}) + "\n\u2192 " + JSON.stringify(res.ok ? res.result : res.error, null, 1);
    if (res.ok) {
      const p = res.result;
      if (p.position && /camera/.test(tool)) { path.push(p.position); yaw = p.yaw_deg; }
      if (tool === "get_camera_pose" && p.position) { path.push(p.position); yaw = p.yaw_deg; }
      if (tool === "triangulate_observations" && p.point) { points.push({p: p.point, warn: (p.warnings || []).length > 0}); $("pt").value = p.point.join(", "); }
      if (tool === "submit_positions" && p.accepted_map) accepted = p.accepted_map;
      if (tool === "submit_positions" && p.map) accepted = p.map;
      if (tool === "list_entities") fillIds(p);
    }
    update(out.state, res.frame_id);
    window.SS_PLAY.calls += 1;
    return res;
  }
  function fillIds(p) {
    const list = p.entities || p.inventory || p.objects || [];
    const ids = list.map(e => typeof e === "string" ? e : e.id);
    $("ids").innerHTML = ids.map(i => '<option value="' + SS.esc(i) + '">' + SS.esc(i) + "</option>").join("");
    if (p.radius_m) radius = p.radius_m;
  }
  function update(st, newFrame) {
    state = st;
    const c = st.counters;
    $("summary").textContent = [st.agent, st.scene_id, "tool calls " + c.tool_calls + (c.calls_left != null ? " (" + c.calls_left + " left)" : ""),
      "images " + c.images_used + " (" + c.images_left + " left)"].join("  \u00b7  ");
    for (const f of st.frames) if (!imgs[f]) {
      const im = new Image(); im.src = "frames/" + f + ".png"; imgs[f] = im;
      const t = document.createElement("canvas"); t.id = "thumb" + f; t.title = "frame " + f;
      t.onclick = () => show(f); $("thumbs").appendChild(t);
      im.onload = () => { SS.drawFrame(t, im, marks.filter(m => m.frame_id === f)); if (shown === f) show(f); };
    }
    if (newFrame != null) show(newFrame); else if (shown == null && st.frames.length) show(st.frames[0]);
    SS.drawMap($("mapc"), {radius, path, yaw, points, accepted, labels: true});
    if (c.done) {
      for (const b of document.querySelectorAll("button")) b.disabled = true;
      const sc = st.score || {}, pct = x => x == null ? "\u2013" : (100 * x).toFixed(1) + "%";
      $("done").innerHTML = '<p><b>Episode over (' + SS.esc(c.end_reason) + ').</b> Run directory written: <code id="rundir">' +
        SS.esc(st.run_dir || "") + "</code></p>" + (st.score ? '<p id="score"><b>Score:</b> all-target mean IoU ' + pct(sc.all_mean_iou) +
        " \u00b7 submitted mean IoU " + pct(sc.submitted_mean_iou) + " \u00b7 coverage " + pct(sc.coverage) + " (" +
        SS.esc(sc.num_submitted) + " of " + SS.esc(sc.num_targets) + " targets) \u00b7 full-scene loss " +
        (sc.full_scene_loss_m == null ? "\u2013" : SS.fmt(sc.full_scene_loss_m) + " m") + "</p>" : "");
      if (st.score) $("summary").textContent += "  \u00b7  score: all-target mean IoU " + pct(sc.all_mean_iou);
      $("done").scrollIntoView({block: "end"});
    }
  }
  function show(f) {
    shown = f; $("fi").textContent = f;
    const im = imgs[f]; if (im && im.complete && im.naturalWidth) SS.drawFrame($("frame"), im, marks.filter(m => m.frame_id === f));
    for (const t of $("thumbs").children) t.classList.toggle("sel", t.id === "thumb" + f);
  }
  $("frame").addEventListener("click", ev => {
    if (shown == null) return;
    const c = $("frame"), r = c.getBoundingClientRect();
    const u = Math.round((ev.clientX - r.left) * c.width / r.width * 10) / 10;
    const v = Math.round((ev.clientY - r.top) * c.height / r.height * 10) / 10;
    marks.push({frame_id: shown, u, v}); drawMarks(); show(shown);
  });
  function drawMarks() {
    $("marks").textContent = marks.length ? marks.map(m => "frame " + m.frame_id + " (" + m.u + ", " + m.v + ")").join("; ") : "none";
    for (const f of Object.keys(imgs)) { const t = $("thumb" + f); if (imgs[f].naturalWidth) SS.drawFrame(t, imgs[f], marks.filter(m => m.frame_id === +f)); }
  }
  const num = id => parseFloat($(id).value);
  const act = {
    fwd: () => call("move_camera", {forward: num("step")}), back: () => call("move_camera", {forward: -num("step")}),
    left: () => call("move_camera", {right: -num("step")}), right: () => call("move_camera", {right: num("step")}),
    up: () => call("move_camera", {up: num("step")}), down: () => call("move_camera", {up: -num("step")}),
    yawl: () => call("rotate_camera", {yaw: num("turn")}), yawr: () => call("rotate_camera", {yaw: -num("turn")}),
    pitchu: () => call("rotate_camera", {pitch: num("turn")}), pitchd: () => call("rotate_camera", {pitch: -num("turn")}),
    set: () => call("set_camera_position", {position: [num("sx"), num("sy"), num("sz")], yaw_deg: num("syaw"), pitch_deg: num("spitch")}),
    capture: () => call("capture_image"), list: () => call("list_entities"), pose: () => call("get_camera_pose"),
    intr: () => call("get_camera_intrinsics"),
    tri: async () => { await call("triangulate_observations", {observations: marks}); marks = []; drawMarks(); if (shown != null) show(shown); },
    clear: () => { marks = []; drawMarks(); if (shown != null) show(shown); },
    submit: () => {
      const p = $("pt").value.split(/[ ,]+/).filter(s => s).map(Number), id = $("ids").value;
      return call("submit_positions", {positions: {[id]: p}});
    },
    map: () => call("submit_positions", {positions: {}}), finish: () => call("finish_mapping"),
  };
  for (const [id, f] of Object.entries(act)) $(id).onclick = f;
  const keys = {w: "fwd", s: "back", a: "left", d: "right", r: "up", f: "down", q: "yawl", e: "yawr", z: "pitchu", x: "pitchd", c: "capture", t: "tri"};
  document.addEventListener("keydown", k => {
    if (k.target.tagName === "INPUT" || k.target.tagName === "SELECT" || k.ctrlKey || k.metaKey) return;
    const a = keys[k.key.toLowerCase()]; if (a && !$(a).disabled) { k.preventDefault(); act[a](); }
  });
  window.SS_PLAY = {calls: 0, get state() { return state; }, get radius() { return radius; }};
  fetch("api/state").then(r => r.json()).then(st => update(st, null));
})();
