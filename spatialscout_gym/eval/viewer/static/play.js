// The human player: every button and key is one tool call POSTed to /api/call; the server runs it
// on the episode and answers with the tool's own result (or refusal text) and the budgets left.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const NS = "http://www.w3.org/2000/svg";
  let state = null, shown = 0, pending = [], lastPoint = null, W = 512, H = 512;

  async function call(tool, args) {
    const r = await fetch("/api/call", { method: "POST", body: JSON.stringify({ tool, args: args || {} }) });
    const out = await r.json();
    const res = out.result;
    const li = document.createElement("li");
    li.textContent = `${tool} ${JSON.stringify(args || {})} \u2192 ` + (res.ok ? JSON.stringify(res.result) : `refused: ${res.error}`);
    if (!res.ok) li.className = "refused";
    $("log").appendChild(li);
    li.scrollIntoView({ block: "nearest" });
    if (tool === "capture_image" && res.ok) shown = res.result.frame_id;
    update(out.state);
    document.body.dataset.calls = String(Number(document.body.dataset.calls || 0) + 1);
    return res;
  }

  function update(s) {
    state = s;
    $("budgets").textContent = `images left ${s.images_left} \u00b7 tool calls left ${s.calls_left ?? "unlimited"}`;
    $("status").textContent = s.done ? `episode over (${s.end_reason}); run directory written to ${s.written}` : "";
    document.body.dataset.done = s.done ? "1" : "";
    const strip = $("strip");
    strip.innerHTML = "";
    for (const f of s.frames) {
      const img = document.createElement("img");
      img.src = `/api/frame/${f}.png`;
      img.title = `frame ${f}`;
      img.dataset.frame = f;
      if (f === shown) img.className = "sel";
      img.onclick = () => { shown = f; update(state); };
      strip.appendChild(img);
    }
    $("frame").onload = drawMarks;
    $("frame").src = `/api/frame/${shown}.png`;
    $("frame-title").textContent = `Frame ${shown}`;
    drawMarks();
  }

  function drawMarks() {
    const img = $("frame");
    if (img.naturalWidth) { W = img.naturalWidth; H = img.naturalHeight; }  // the render grid
    const mk = $("marks");
    mk.setAttribute("viewBox", `0 0 ${W} ${H}`);
    mk.innerHTML = "";
    for (const o of pending) if (o.frame_id === shown) {
      const c = document.createElementNS(NS, "circle");
      Object.entries({ cx: o.u, cy: o.v, r: 8, fill: "none", stroke: "#ffcc00", "stroke-width": 3, class: "mark" })
        .forEach(([k, v]) => c.setAttribute(k, v));
      mk.appendChild(c);
    }
    $("pending").textContent = pending.length ? pending.map((o) => `frame ${o.frame_id} (${o.u.toFixed(1)}, ${o.v.toFixed(1)})`).join("; ") : "no marks";
  }

  // a click marks the pixel under the cursor (u right, v down, in the frame's own pixels)
  $("marks").style.pointerEvents = "none";
  $("frame").addEventListener("click", (ev) => {
    drawMarks();
    const r = ev.target.getBoundingClientRect();
    const u = (ev.clientX - r.left) / r.width * W, v = (ev.clientY - r.top) / r.height * H;
    pending = pending.filter((o) => o.frame_id !== shown).concat([{ frame_id: shown, u, v }]);
    drawMarks();
  });

  const step = () => Number($("step").value), turn = () => Number($("turn").value);
  const actions = {
    w: () => call("move_camera", { forward: step() }), s: () => call("move_camera", { forward: -step() }),
    a: () => call("move_camera", { right: -step() }), d: () => call("move_camera", { right: step() }),
    r: () => call("move_camera", { up: step() }), f: () => call("move_camera", { up: -step() }),
    q: () => call("rotate_camera", { yaw: turn() }), e: () => call("rotate_camera", { yaw: -turn() }),
    z: () => call("rotate_camera", { pitch: turn() }), x: () => call("rotate_camera", { pitch: -turn() }),
    c: () => call("capture_image"),
  };
  for (const k of "wsadrfqezx") $(`b-${k}`).onclick = actions[k];
  $("b-capture").onclick = actions.c;
  $("b-pose").onclick = () => call("get_camera_pose");
  $("b-intr").onclick = () => call("get_camera_intrinsics");
  $("b-clear").onclick = () => { pending = []; drawMarks(); };
  $("b-tri").onclick = async () => {
    const res = await call("triangulate_observations", { observations: pending });
    if (res.ok && res.result.point) { lastPoint = res.result.point; $("point").value = lastPoint.join(", "); pending = []; drawMarks(); }
  };
  $("b-list").onclick = async () => {
    const res = await call("list_entities");
    if (!res.ok) return;
    const ids = (res.result.entities || res.result.ids || []).map((x) => (typeof x === "string" ? x : x.id));
    $("entity").innerHTML = ids.map((i) => `<option>${i}</option>`).join("");
  };
  $("b-submit").onclick = () => {
    const p = $("point").value.split(",").map(Number);
    return call("submit_positions", { positions: { [$("entity").value]: p } });
  };
  $("b-finish").onclick = () => call("finish_mapping");
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    const a = actions[ev.key];
    if (a) { ev.preventDefault(); a(); }
  });
  fetch("/api/state").then((r) => r.json()).then((s) => { update(s); document.body.dataset.ready = "1"; });
})();
