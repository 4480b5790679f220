// Shared drawing for the viewer and the play page: a top-down map of the task frame
// (x forward = up on the canvas, y left = left on the canvas; metres), and frames with marks.
"use strict";
const SS = {};
SS.drawMap = function (canvas, o) {
  // o: {radius, path: [[x,y,z]], yaw (deg, last pose), points: [{p, warn}], accepted: {id: p},
  //     targets: [{center, size, iou, id}] or null, rays: [{from, to}]}
  const ctx = canvas.getContext("2d"), W = canvas.width, H = canvas.height;
  // an unknown radius (the play page before list_entities) draws no circle: the map is scaled
  // to what is known (the camera path, points and map), at least 1 m around the start
  const known = typeof o.radius === "number" && o.radius > 0;
  let ext = known ? o.radius : 1;
  if (!known) for (const p of [...(o.path || []), ...(o.points || []).map(q => q.p), ...Object.values(o.accepted || {})])
    if (p) ext = Math.max(ext, Math.abs(p[0]) + 0.5, Math.abs(p[1]) + 0.5);
  const R = ext * 1.08, s = Math.min(W, H) / (2 * R);
  const X = p => W / 2 - p[1] * s, Y = p => H / 2 - p[0] * s;   // task y left -> canvas left
  ctx.clearRect(0, 0, W, H);
  ctx.strokeStyle = "#c9d0db"; ctx.setLineDash([4, 4]);
  if (known) { ctx.beginPath(); ctx.arc(W / 2, H / 2, o.radius * s, 0, 2 * Math.PI); ctx.stroke(); }
  ctx.setLineDash([]);
  ctx.fillStyle = "#8a93a3"; ctx.font = "11px system-ui";
  ctx.fillText(known ? "search region r = " + o.radius.toFixed(2) + " m" : "search region: list_entities gives its radius", 6, 14);
  ctx.fillText("\u2191 x forward (task frame)", 6, H - 8);
  if (o.targets) for (const t of o.targets) {
    const c = t.iou > 0.5 ? "#2e9d4a" : t.iou > 0 ? "#e0a100" : "#d0453b";
    ctx.strokeStyle = c; ctx.lineWidth = 1.2;
    ctx.strokeRect(X(t.center) - t.size[1] * s / 2, Y(t.center) - t.size[0] * s / 2,
                   Math.max(2, t.size[1] * s), Math.max(2, t.size[0] * s));
  }
  for (const r of o.rays || []) {
    ctx.strokeStyle = "rgba(47,111,222,0.35)"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(X(r.from), Y(r.from)); ctx.lineTo(X(r.to), Y(r.to)); ctx.stroke();
  }
  if (o.path && o.path.length) {
    ctx.strokeStyle = "#5a6478"; ctx.lineWidth = 1.5; ctx.beginPath();
    o.path.forEach((p, i) => i ? ctx.lineTo(X(p), Y(p)) : ctx.moveTo(X(p), Y(p))); ctx.stroke();
    const p = o.path[o.path.length - 1], a = (o.yaw || 0) * Math.PI / 180;
    ctx.fillStyle = "#1d2330"; ctx.beginPath(); ctx.arc(X(p), Y(p), 5, 0, 2 * Math.PI); ctx.fill();
    ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 2; ctx.beginPath(); ctx.moveTo(X(p), Y(p));
    ctx.lineTo(X(p) - Math.sin(a) * 18, Y(p) - Math.cos(a) * 18); ctx.stroke();
  }
  for (const q of o.points || []) {
    ctx.fillStyle = q.warn ? "#d0453b" : "#2f6fde";
    ctx.beginPath(); ctx.arc(X(q.p), Y(q.p), 3, 0, 2 * Math.PI); ctx.fill();
  }
  for (const [id, p] of Object.entries(o.accepted || {})) {
    ctx.strokeStyle = "#7b2cbf"; ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(X(p) - 4, Y(p) - 4); ctx.lineTo(X(p) + 4, Y(p) + 4);
    ctx.moveTo(X(p) + 4, Y(p) - 4); ctx.lineTo(X(p) - 4, Y(p) + 4); ctx.stroke();
    if (o.labels) { ctx.fillStyle = "#4a1d7a"; ctx.fillText(id, X(p) + 5, Y(p) - 4); }
  }
};
SS.legend = '<div class="legend"><span><i class="sw" style="background:#5a6478"></i>camera path</span>' +
  '<span><i class="sw" style="background:#2f6fde"></i>triangulated</span>' +
  '<span><i class="sw" style="background:#7b2cbf"></i>accepted map</span>' +
  '<span><i class="sw" style="background:#2e9d4a"></i>GT IoU&gt;0.5</span>' +
  '<span><i class="sw" style="background:#e0a100"></i>GT 0&lt;IoU\u22640.5</span>' +
  '<span><i class="sw" style="background:#d0453b"></i>GT missed</span></div>';
// Draw an image into a canvas with pixel marks [{u, v, label}] (pixel coordinates of the frame).
SS.drawFrame = function (canvas, img, marks) {
  const ctx = canvas.getContext("2d");
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  ctx.drawImage(img, 0, 0);
  const r = Math.max(3, img.naturalWidth / 60);
  for (const m of marks || []) {
    ctx.strokeStyle = "#ff2d55"; ctx.lineWidth = Math.max(1.5, r / 3);
    ctx.beginPath(); ctx.arc(m.u, m.v, r, 0, 2 * Math.PI); ctx.stroke();
    ctx.beginPath(); ctx.moveTo(m.u - 2 * r, m.v); ctx.lineTo(m.u + 2 * r, m.v);
    ctx.moveTo(m.u, m.v - 2 * r); ctx.lineTo(m.u, m.v + 2 * r); ctx.stroke();
  }
};
SS.esc = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
SS.fmt = (x, d = 3) => x == null ? "\u2013" : Number(x).toFixed(d);
// scores on one scale, percent, as report, compare and the leaderboard print them
SS.pct = (x, d = 2) => x == null ? "\u2013" : (100 * Number(x)).toFixed(d) + "%";
// an event as indented text: strings as written (a prompt's line breaks as line breaks, not \n)
SS.readable = function (x) {
  function text(v, pad) {
    if (v === null || typeof v !== "object") return typeof v === "string" ? v.replace(/\n/g, "\n" + pad + "  ") : JSON.stringify(v);
    const inner = pad + "  ";
    const items = Array.isArray(v) ? v.map(w => inner + "- " + text(w, inner).replace(/^\n\s*/, ""))
      : Object.entries(v).map(([k, w]) => inner + k + ": " + text(w, inner));
    return items.length ? "\n" + items.join("\n") : (Array.isArray(v) ? "[]" : "{}");
  }
  return text(x, "").replace(/^\n/, "").split("\n").map(l => l.slice(2)).join("\n");
};
