"use strict";
// Draws the report from the JSON in #report-data.  No network access, no libraries: plain DOM and SVG.
(function () {
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const PALETTE = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#bcbd22",
    "#7f7f7f", "#393b79", "#637939", "#843c39", "#7b4173", "#3182bd", "#31a354", "#756bb1"];
  const color = {};
  D.consumers.forEach((c, n) => { color[c] = n < PALETTE.length ? PALETTE[n] : `hsl(${(n * 137) % 360},55%,45%)`; });
  const colorOf = (c) => color[c] || "#555";
  const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (ch) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[ch]));
  const $ = (id) => document.getElementById(id);
  const state = {mode: "key", axis: "i", view: null, focus: null};
  // the axis: event index (the checkers' time) or seconds since the first event
  const coord = (i, t) => (state.axis === "t" ? (t - D.span.t0) / 1e9 : i);
  const whole = () => {
    const lo = coord(D.span.i0, D.span.t0), hi = coord(D.span.i1, D.span.t1);
    return [lo, Math.max(hi, lo + (state.axis === "t" ? 1e-9 : 1))];
  };
  state.view = whole();
  function fmtT(sec) {  // seconds, in a unit that suits the whole run
    const span = whole()[1];
    if (span >= 10) return `${sec.toFixed(1)}s`;
    if (span >= 0.1) return `${sec.toFixed(3)}s`;
    if (span >= 1e-4) return `${(sec * 1e3).toFixed(3)}ms`;
    return `${Math.round(sec * 1e9)}ns`;
  }

  // -- time labels: event index -> seconds since the first event (from the throughput buckets) ------------
  const rows = D.throughput.rows;
  function secondsAt(i) {
    if (!rows.length) return null;
    let lo = 0, hi = rows.length - 1;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (rows[mid][0] <= i) lo = mid; else hi = mid - 1; }
    return (rows[lo][1] - D.span.t0) / 1e9;
  }

  // -- lanes --------------------------------------------------------------------------------------------------
  function naturalKey(s) { return String(s).replace(/\d+/g, (d) => d.padStart(12, "0")); }
  function lanes() {
    if (state.mode === "consumer") return D.consumers.slice();
    const keys = Object.keys(D.holds).concat(Object.keys(D.marks));
    D.violations.forEach((v) => { if (v.key != null) keys.push(v.key); });
    return Array.from(new Set(keys)).sort((a, b) => naturalKey(a) < naturalKey(b) ? -1 : 1);
  }
  function laneOf(w) {
    if (state.mode === "consumer") return w.consumer;
    return w.key != null ? w.key : (w.op === "receive" || w.op === "ack" || w.op === "nack" || w.op === "publish" ? "" : null);
  }

  // a violation's witnesses' extent on the current axis (witnesses the pass did not read count by index)
  function extent(v) {
    if (state.axis === "i") return v.events.length ? [Math.min(...v.events), Math.max(...v.events)] : [Infinity, -Infinity];
    const at = v.witnesses.filter((w) => w.t != null).map((w) => coord(w.i, w.t));
    return at.length ? [Math.min(...at), Math.max(...at)] : [Infinity, -Infinity];
  }

  // -- the timeline --------------------------------------------------------------------------------------------
  const LABEL = 150, LANE = 16, TOP = 34, BAR = 7;
  function drawTimeline() {
    const box = $("timeline-box");
    const width = Math.max(700, box.clientWidth - 20);
    const plot = width - LABEL - 10;
    const [v0, v1] = state.view;
    const x = (i) => LABEL + ((i - v0) / (v1 - v0)) * plot;
    const clampX = (i) => Math.min(LABEL + plot, Math.max(LABEL, x(i)));
    const names = lanes();
    // a lane has one row per consumer that held its key (per-key lanes), so overlapping holds stay visible
    const rowsOf = {};
    names.forEach((n) => { rowsOf[n] = []; });
    for (const [key, holds] of Object.entries(D.holds)) {
      for (const h of holds) {
        const lane = state.mode === "consumer" ? h[2] : key;
        const sub = state.mode === "consumer" ? "" : h[2];
        if (lane in rowsOf && !rowsOf[lane].includes(sub)) rowsOf[lane].push(sub);
      }
    }
    const y = {}, laneH = {};
    const FROW = D.faults.length ? 18 : 0;  // a row naming the faults, above the lanes
    let yy0 = TOP + FROW;
    names.forEach((n) => { y[n] = yy0; laneH[n] = Math.max(LANE, 4 + BAR * Math.max(1, rowsOf[n].length)); yy0 += laneH[n]; });
    const barY = (lane, c) => y[lane] + 2 + BAR * Math.max(0, rowsOf[lane].indexOf(state.mode === "consumer" ? "" : c));
    const height = yy0 + (names.length ? 10 : 30);
    const out = [`<svg id="timeline-svg" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">`];
    // axis
    for (let k = 0; k <= 8; k++) {
      const v = v0 + ((v1 - v0) * k) / 8, xx = x(v), i = Math.round(v), s = secondsAt(i);
      const label = state.axis === "t" ? fmtT(v) : `E${i}${s == null ? "" : " · " + s.toFixed(2) + "s"}`;
      out.push(`<line class="grid-line" x1="${xx}" x2="${xx}" y1="${TOP - 4}" y2="${height}"/>`);
      out.push(`<text class="axis" x="${xx}" y="12" text-anchor="${k === 0 ? "start" : k === 8 ? "end" : "middle"}">${label}</text>`);
    }
    const badLanes = {};
    D.violations.forEach((v) => { const l = state.mode === "consumer" ? null : v.key; if (l != null) badLanes[l] = (badLanes[l] || 0) + 1;
      if (state.mode === "consumer") v.consumers.forEach((c) => { badLanes[c] = (badLanes[c] || 0) + 1; }); });
    names.forEach((n, k) => {
      if (k % 2 === 0) out.push(`<rect x="0" y="${y[n]}" width="${width}" height="${laneH[n]}" fill="#fafbfc"/>`);
      out.push(`<text class="lane-label${badLanes[n] ? " bad" : ""}" data-lane="${esc(n)}" x="4" y="${y[n] + 12}">${esc(n === "" ? "(empty key)" : n).slice(0, 20)}${badLanes[n] ? ` (${badLanes[n]})` : ""}<title>${badLanes[n] ? badLanes[n] + " violation(s) on this lane" : ""}</title></text>`);
    });
    // membership changes and faults: across every lane
    D.global.forEach(([i, op, c, label, t]) => {
      const at = coord(i, t);
      if (at < v0 || at > v1) return;
      const xx = x(at);
      out.push(`<line class="gmark ${op}" data-i="${i}" x1="${xx}" x2="${xx}" y1="${TOP - 14}" y2="${height - 6}"><title>E${i} ${op} ${esc(c || "")} ${esc(label)}</title></line>`);
      out.push(`<text x="${xx + 2}" y="${TOP - 6}" font-size="9" class="axis">${esc(op[0].toUpperCase())}${esc(c || "")}</text>`);
    });
    if (FROW) {
      out.push(`<text class="row-label" x="4" y="${TOP + 12}">faults (${D.faults.length})</text>`);
      let lastLabel = -1e9;
      D.faults.forEach(([i, t, name, cs]) => {
        const at = coord(i, t);
        if (at < v0 || at > v1) return;
        const xx = x(at), text = `${name}${cs.length ? " " + cs.join(",") : ""}`;
        out.push(`<path class="fault-mark" data-i="${i}" d="M${xx} ${TOP + 3}l4 5l-4 5l-4 -5z"><title>E${i} fault ${esc(text)}</title></path>`);
        if (xx - lastLabel > 12 + 5.5 * text.length && xx + 5.5 * text.length < width) { out.push(`<text class="axis" x="${xx + 6}" y="${TOP + 12}" font-size="9">${esc(text)}</text>`); lastLabel = xx; }
      });
    }
    if (!names.length) out.push(`<text class="axis" x="${LABEL}" y="${yy0 + 18}">no key lanes drawn (see above); membership changes and faults are marked across</text>`);
    // holds
    for (const [key, holds] of Object.entries(D.holds)) {
      for (const [s, e, c, endOp, msg, ts, te] of holds) {
        const from = coord(s, ts), end = e < 0 ? coord(D.span.i1, D.span.t1) : coord(e, te);
        if (end < v0 || from > v1) continue;
        const lane = state.mode === "consumer" ? c : key;
        if (!(lane in y)) continue;
        const x0 = clampX(from), x1 = Math.max(clampX(end), x0 + 5);
        out.push(`<rect class="hold${e < 0 ? " open-end" : ""}" data-s="${s}" data-e="${e}" x="${x0}" y="${barY(lane, c) + 0.5}" width="${x1 - x0}" height="${BAR - 1}" fill="${colorOf(c)}"><title>${esc(c)} held ${esc(msg)} (key ${esc(key)}) from E${s} ${e < 0 ? "to the end" : "until E" + e + " " + endOp}</title></rect>`);
      }
    }
    // acks, nacks, publishes
    for (const [key, marks] of Object.entries(D.marks)) {
      for (const [i, op, c, t] of marks) {
        const at = coord(i, t);
        if (at < v0 || at > v1) continue;
        const lane = state.mode === "consumer" ? c : key;
        if (lane == null || !(lane in y)) continue;
        const xx = x(at), yy = y[lane], hh = laneH[lane];
        if (op === "ack") out.push(`<line class="ack" x1="${xx}" x2="${xx}" y1="${yy + 1}" y2="${yy + hh - 1}"><title>E${i} ack by ${esc(c)}</title></line>`);
        else if (op === "nack") out.push(`<path class="nack" d="M${xx - 3} ${yy + hh / 2 - 4}l6 8m0 -8l-6 8"><title>E${i} nack by ${esc(c)}</title></path>`);
        else if (op === "publish" && state.mode === "key") out.push(`<circle class="publish" cx="${xx}" cy="${yy + hh / 2}" r="1.6"><title>E${i} publish</title></circle>`);
      }
    }
    // violations: a band over the witnesses' span on each lane they touch, and a ring on each witness
    D.violations.forEach((v) => {
      const [lo, hi] = extent(v);
      if (lo > hi) return;
      if (hi < v0 || lo > v1) return;
      const bandLanes = new Set();
      v.witnesses.forEach((w) => { const l = laneOf(w); if (l != null && l in y) bandLanes.add(l); });
      if (state.mode === "key" && v.key != null && v.key in y) bandLanes.add(v.key);
      const active = state.focus === v.id ? " active" : "";
      if (active) bandLanes.forEach((l) => {
        const x0 = clampX(lo) - 3, x1 = clampX(hi) + 3;
        out.push(`<rect class="vband${active}" data-v="${v.id}" x="${x0}" y="${y[l]}" width="${x1 - x0}" height="${laneH[l]}"><title>${esc(v.kind)} — click for its explanation</title></rect>`);
      });
      v.witnesses.forEach((w) => {
        const at = w.t == null ? null : coord(w.i, w.t);
        if (at == null || at < v0 || at > v1) return;
        let l = laneOf(w);
        if (l == null || !(l in y)) l = bandLanes.values().next().value;
        if (l == null) return;
        const cx = x(at), cy = w.consumer != null && rowsOf[l].includes(w.consumer) ? barY(l, w.consumer) + BAR / 2 : y[l] + laneH[l] / 2;
        const tip = `<title>E${w.i} ${esc(w.op || "")} ${esc(w.consumer || "")}: witness of ${esc(v.kind)}</title>`;
        if (active) out.push(`<circle class="witness active" id="w-${v.id}-${w.i}" data-v="${v.id}" data-i="${w.i}" cx="${cx}" cy="${cy}" r="7">${tip}</circle>`);
        else out.push(`<path class="witness" id="w-${v.id}-${w.i}" data-v="${v.id}" data-i="${w.i}" d="M${cx - 4} ${y[l] - 1}h8l-4 5z">${tip}</path>`);
      });
    });
    out.push("</svg>");
    $("timeline-scroll").innerHTML = out.join("");
    $("view-range").textContent = state.axis === "t"
      ? `${fmtT(v0)}–${fmtT(v1)} of ${fmtT(whole()[1])}; ${names.length} lane(s)`
      : `events E${Math.round(v0)}–E${Math.round(v1)} of E${D.span.i0}–E${D.span.i1}; ${names.length} lane(s)`;
  }

  function focusViolation(n, scroll) {
    const v = D.violations[n];
    state.focus = n;
    const [lo, hi] = extent(v);
    if (lo <= hi) {
      const [w0, w1] = whole();
      const unit = (w1 - w0) / Math.max(1, D.span.i1 - D.span.i0);  // one event's width, on average
      const pad = Math.max(25 * unit, (hi - lo) * 0.6);
      state.view = [Math.max(w0, lo - pad), Math.min(w1, hi + pad)];
      if (state.view[1] <= state.view[0]) state.view[1] = state.view[0] + unit;
    }
    drawTimeline();
    document.querySelectorAll("article.violation.active").forEach((a) => a.classList.remove("active"));
    reveal(n);
    $("v-" + n).classList.add("active");
    if (scroll) {
      const first = document.querySelector(`#timeline-svg .witness[data-v="${n}"]`) || $("timeline");
      $("timeline").scrollIntoView({block: "start"});
      if (first && first.scrollIntoView) first.scrollIntoView({block: "center", inline: "center"});
    }
    history.replaceState(null, "", "#v-" + n);
  }

  function backToList(n) {
    focusViolation(n, false);  // opens its group
    $("v-" + n).scrollIntoView({block: "start"});
  }

  // -- the verdict ---------------------------------------------------------------------------------------------
  function drawVerdict() {
    const v = D.verdict, h = D.header;
    const word = v.validity === "unknown" ? "UNKNOWN" : v.valid ? "VALID" : "INVALID";
    const cls = v.validity === "unknown" ? "unknown" : v.valid ? "valid" : "invalid";
    const counts = Object.entries(v.counts).map(([k, n]) => `<tr><td><a class="kind-link" href="#kind-${esc(k)}"><span class="kind${v.permitted.includes(k) ? " allowed" : ""}">${esc(k)}</span></a></td><td>${n}</td></tr>`).join("") || `<tr><td class="muted">no violation found</td></tr>`;
    const sub = h.subscription || {};
    const sel = h.selector ? `${h.selector.kind} (Pulsar ${h.selector.pulsar_version}, ${h.selector.points} points)` : "none named";
    const caps = h.capabilities && typeof h.capabilities === "object"
      ? Object.entries(h.capabilities).map(([k, val]) => (val === true ? k : val === false ? `no ${k}` : `${k}: ${val}`)).join(", ") : null;
    const claims = [["target", h.target], ["broker", h.broker], ["claimed contract", h.claimed_contract],
      ["Pulsar version", h.pulsar_version], ["implementation", h.implementation], ["scenario", h.scenario],
      ["subscription", `${sub.name || ""} ${sub.type || ""} ${sub.key_shared_mode || ""}${sub.allow_out_of_order_delivery ? " out-of-order allowed" : ""}`],
      ["selector", sel], ["deduplication", String(h.deduplication)], ["seed", h.seed], ["capabilities", caps]]
      .filter(([, val]) => val != null && val !== "").map(([k, val]) => `<tr><th>${esc(k)}</th><td>${esc(val)}</td></tr>`).join("");
    const notes = v.notes.map((n) => `<li>${esc(n)}</li>`).join("");
    $("verdict").innerHTML = `<p><span id="verdict-badge" class="badge ${cls}">${word}</span> ${v.events} events checked,
      profile <b id="verdict-profile">${esc(v.profile)}</b> (${esc(v.engine)} engine)${v.permitted.length ? "; permitted by the profile: " + esc(v.permitted.join(", ")) : ""}${v.unjudged.length ? "; not judged: " + esc(v.unjudged.join(", ")) : ""}</p>
      <div class="grid"><div><h3>Violations found</h3><table id="counts">${counts}</table></div>
      <div><h3>What the target claims</h3><table id="claims">${claims}</table></div></div>
      ${notes ? `<h3>Notes</h3><ul class="notes" id="notes">${notes}</ul>` : ""}`;
    if (D.summarised.length) {
      $("summarised").innerHTML = `<div class="summary-box"><b>Summarised.</b><ul>${D.summarised.map((s) => `<li>${esc(s)}</li>`).join("")}</ul></div>`;
    }
  }

  function drawLegend(where) {
    $(where).innerHTML = D.consumers.map((c) => `<span data-consumer="${esc(c)}"><i class="sw" style="background:${colorOf(c)}"></i>${esc(c)}</span>`).join("");
  }

  // -- the violations list ---------------------------------------------------------------------------------------
  function card(v) {
    const rows = v.witnesses.map((w) => `<tr><td><a href="#tl" class="wit" data-v="${v.id}">E${w.i}</a></td><td>${esc(w.op || "?")}</td><td>${esc(w.consumer || "")}</td><td><code>${esc(w.line || "(not read)")}</code></td></tr>`).join("");
    return `<article class="violation${v.allowed ? " allowed" : ""}" id="v-${v.id}" data-v="${v.id}">
      <h3><span class="kind${v.allowed ? " allowed" : ""}">${esc(v.kind)}</span>${v.key != null ? ` key <code>${esc(v.key)}</code>` : ""}
      ${v.consumers.length ? ` consumers ${esc(v.consumers.join(", "))}` : ""}${v.allowed ? ` <span class="muted">(permitted by the profile)</span>` : ""}
      <a href="#tl" class="show" data-v="${v.id}">show on the timeline</a></h3>
      <pre class="explanation">${esc(v.explanation)}</pre>
      <table class="witnesses"><tr><th>event</th><th>op</th><th>consumer</th><th>trace line</th></tr>${rows}</table></article>`;
  }
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  // violations by kind, then by key: a group is one line with its count, open or folded (data.py decides which)
  function drawViolations() {
    if (!D.violations.length && !D.groups.length) { $("violation-list").innerHTML = `<p class="muted">No violation.</p>`; return; }
    let nGroups = 0;
    const out = D.groups.map((K) => {
      const lines = K.groups.map((g) => {
        nGroups += 1;
        const vs = g.ids.map((n) => D.violations[n]);
        const shown = vs.slice(0, g.shown).map(card).join("");
        const rest = vs.slice(g.shown);
        const unlisted = g.count - g.ids.length;
        const keyText = g.key != null ? `key <code>${esc(g.key)}</code>` : `<span class="muted">no key</span>`;
        const span = g.first != null ? ` · E${g.first}${g.last !== g.first ? "–E" + g.last : ""}` : "";
        const who = g.consumers.length ? ` · ${esc(g.consumers.join(", "))}` : "";
        let folded = rest.map(card).join("");
        if (g.shown && rest.length) folded = `<details class="vmore"><summary>${rest.length} more ${esc(K.kind)} on this key</summary>${folded}</details>`;
        const note = unlisted ? `<p class="muted">${unlisted} more not listed (only the first ${D.violations.length} violations of the run are)</p>` : "";
        return `<details class="vgroup" data-kind="${esc(K.kind)}" data-key="${esc(g.key == null ? "" : g.key)}" data-count="${g.count}"${g.shown ? " open" : ""}>
          <summary>${keyText} <b class="count">×${g.count}</b><span class="muted">${who}${span}</span></summary>
          ${shown}${folded}${note}</details>`;
      });
      const hidden = K.groups.slice(K.lines), hiddenCount = hidden.reduce((n, g) => n + g.count, 0);
      let groups = lines.slice(0, K.lines).join("");
      if (hidden.length) groups += `<details class="vkeys"><summary>${plural(hidden.length, "more group")} of ${esc(K.kind)}, ${hiddenCount} violation${hiddenCount === 1 ? "" : "s"}</summary>${lines.slice(K.lines).join("")}</details>`;
      const keys = K.keys ? ` on ${plural(K.keys, "key")}` : "";
      return `<section class="vkind${K.allowed ? " allowed" : ""}" id="kind-${esc(K.kind)}" data-kind="${esc(K.kind)}">
        <h3><span class="kind${K.allowed ? " allowed" : ""}">${esc(K.kind)}</span> ${K.count}${keys}${K.allowed ? ` <span class="muted">(permitted by the profile)</span>` : ""}</h3>${groups}</section>`;
    });
    $("violation-list").innerHTML = out.join("");
    const total = D.groups.reduce((n, K) => n + K.count, 0);
    $("toc-violations").textContent = `(${total} in ${plural(nGroups, "group")} by kind and key)`;
  }

  // a card inside folded groups: open them, so it can be seen and scrolled to
  function reveal(n) {
    for (let e = $("v-" + n); e; e = e.parentElement) if (e.tagName === "DETAILS") e.open = true;
  }

  // -- hash ranges over time -------------------------------------------------------------------------------------
  function drawRanges() {
    const R = D.ranges;
    const notes = R.notes.map((n) => `<li>${esc(n)}</li>`).join("");
    if (!R.periods.length) { $("ranges-box").innerHTML = `<p class="muted">No ranges drawn.</p><ul>${notes}</ul>`; return; }
    const width = Math.max(700, $("ranges-box").clientWidth - 20), LBL = 170, plot = width - LBL - 10, ROW = 22;
    const [lo, hi] = R.space, size = hi - lo + 1;
    const x = (s) => LBL + ((s - lo) / size) * plot;
    const misassigned = new Set(D.violations.filter((v) => v.kind === "misassigned" && v.key != null).map((v) => v.key));
    const byPeriod = R.periods.map(() => []);
    R.keys.forEach((k) => k.deliveries.forEach(([p, r, e]) => byPeriod[p].push([k, r, e])));
    const height = 24 + R.periods.length * ROW + 60;
    const out = [`<svg id="ranges-svg" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">`];
    out.push(`<text class="axis" x="${LBL}" y="12">${lo}</text><text class="axis" x="${LBL + plot}" y="12" text-anchor="end">${hi}</text>`);
    R.periods.forEach((p, n) => {
      const yy = 20 + n * ROW;
      out.push(`<text class="lane-label" x="4" y="${yy + 14}">after E${p.i} ${esc(p.op)} ${esc(p.consumer || "")}</text>`);
      out.push(`<rect x="${LBL}" y="${yy + 2}" width="${plot}" height="${ROW - 6}" fill="#eceff1"/>`);
      for (const [c, ranges] of Object.entries(p.owners)) {
        out.push(`<g class="owner" data-consumer="${esc(c)}">`);
        ranges.forEach(([s, e]) => out.push(`<rect x="${x(s)}" y="${yy + 2}" width="${Math.max(0.8, x(e + 1) - x(s))}" height="${ROW - 6}" fill="${colorOf(c)}" opacity="0.55"><title>${esc(c)} owns [${s}, ${e}] after E${p.i}</title></rect>`));
        out.push(`</g>`);
      }
      byPeriod[n].forEach(([k, r, e]) => {
        const xx = x(k.slot) , differs = e !== r;
        out.push(`<line class="keytick${differs ? " differs" : ""}" data-key="${esc(k.key)}" x1="${xx}" x2="${xx}" y1="${yy}" y2="${yy + ROW - 2}" stroke="${colorOf(r)}" stroke-width="${differs ? 3 : 1.5}"><title>key ${esc(k.key)} (slot ${k.slot}) delivered to ${esc(r)}${differs ? "; the selector names " + esc(e || "nobody") : ""}</title></line>`);
      });
    });
    const yl = 28 + R.periods.length * ROW;
    out.push(`<text class="lane-label" x="4" y="${yl + 12}">keys on the hash line</text><line x1="${LBL}" x2="${LBL + plot}" y1="${yl + 8}" y2="${yl + 8}" stroke="#90a4ae"/>`);
    let lastLabel = -1e9;
    R.keys.slice().sort((a, b) => a.slot - b.slot).forEach((k) => {
      const xx = x(k.slot), bad = misassigned.has(k.key);
      const last = k.deliveries.length ? k.deliveries[k.deliveries.length - 1][1] : null;
      out.push(`<line class="keytick${bad ? " misassigned" : ""}" data-key="${esc(k.key)}" x1="${xx}" x2="${xx}" y1="${yl}" y2="${yl + 16}" stroke="${bad ? "#c62828" : colorOf(last)}"><title>key ${esc(k.key)}: slot ${k.slot}${bad ? " — misassigned" : ""}</title></line>`);
      const half = 2.8 * String(k.key).length, lx = Math.max(LBL + half, Math.min(xx, width - 4 - half));
      if (lx - lastLabel > 9 + 5.5 * String(k.key).length) { out.push(`<text class="axis keylabel" x="${lx}" y="${yl + 28}" font-size="9" text-anchor="middle">${esc(k.key)}</text>`); lastLabel = lx; }
    });
    out.push("</svg>");
    $("ranges-box").innerHTML = `<p>Selector <b>${esc(R.selector)}</b>, subscription <code>${esc(R.subscription)}</code>, hash range [${lo}, ${hi}].
      Each row is the membership after one change; a tick is a key delivered in that period, coloured by the consumer that got it,
      <span style="color:#c62828">thick where the selector names another consumer</span>. Keys reported <code>misassigned</code>: ${misassigned.size ? esc(Array.from(misassigned).join(", ")) : "none"}.</p>
      <div class="legend" id="ranges-legend">${D.consumers.map((c) => `<span class="range-consumer" data-consumer="${esc(c)}"><i class="sw" style="background:${colorOf(c)}"></i>${esc(c)}</span>`).join("")}</div>
      <div class="scroll">${out.join("")}</div>${notes ? `<ul class="notes">${notes}</ul>` : ""}`;
    // the estimate above places most labels; a measured one past the right edge is pulled back inside
    document.querySelectorAll("#ranges-svg text.keylabel").forEach((t) => {
      const b = t.getBBox();
      if (b.x + b.width > width - 2) { t.setAttribute("text-anchor", "end"); t.setAttribute("x", String(width - 2)); }
    });
  }

  // -- throughput ----------------------------------------------------------------------------------------------------
  function drawThroughput() {
    if (rows.length < 2) { $("throughput-box").innerHTML = `<p class="muted">Too short a run for a throughput chart.</p>`; return; }
    const width = Math.max(700, $("throughput-box").clientWidth - 20), H = 160, L = 60, plot = width - L - 10;
    const t0 = rows[0][1], t1 = Math.max(rows[rows.length - 1][2], t0 + 1);
    const x = (t) => L + ((t - t0) / (t1 - t0)) * plot;
    // equal time bins (a bucket counts in the bin of its first event): rates per second, not per bucket
    const nbins = Math.max(1, Math.min(80, rows.length)), binNs = (t1 - t0) / nbins;
    const series = [["publish", 3, "#9aa5b1"], ["receive", 4, "#1f77b4"], ["ack", 5, "#2ca02c"]];
    const sums = series.map(() => new Array(nbins).fill(0));
    rows.forEach((r) => { const k = Math.min(nbins - 1, Math.floor((r[1] - t0) / binNs)); series.forEach(([, col], n) => { sums[n][k] += r[col]; }); });
    const rates = sums.map((bins) => bins.map((c) => c / (binNs / 1e9)));
    let max = 1;
    rates.forEach((rs) => rs.forEach((v) => { max = Math.max(max, v); }));
    const y = (v) => 10 + H - (v / max) * H;
    const out = [`<svg id="throughput-svg" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 40}">`];
    out.push(`<text class="axis" x="4" y="16">${Math.round(max)}/s</text><text class="axis" x="4" y="${H + 10}">0</text>`);
    const secs = (t1 - t0) / 1e9, digits = secs >= 100 ? 0 : secs >= 10 ? 1 : 2;
    for (let k = 0; k <= 6; k++) {
      const xx = L + (plot * k) / 6;
      out.push(`<line class="grid-line" x1="${xx}" x2="${xx}" y1="10" y2="${H + 10}"/><text class="axis" x="${xx}" y="${H + 30}" text-anchor="${k === 0 ? "start" : k === 6 ? "end" : "middle"}">${((secs * k) / 6).toFixed(digits)}s</text>`);
    }
    // faults, where they happened on the run's clock (a heal or a restart's end in a lighter line)
    let lastLabel = -1e9;
    D.faults.forEach(([i, t, name, cs]) => {
      if (t < t0 || t > t1) return;
      const xx = x(t), heal = /_heal$|_restarted$|_up$/.test(name), text = `${name}${cs.length ? " " + cs.join(",") : ""}`;
      out.push(`<line class="tfault${heal ? " heal" : ""}" data-i="${i}" x1="${xx}" x2="${xx}" y1="6" y2="${H + 14}"><title>E${i} at ${((t - t0) / 1e9).toFixed(3)}s: ${esc(text)}</title></line>`);
      if (!heal && xx - lastLabel > 10 + 5 * name.length && xx + 5 * name.length < width) { out.push(`<text class="axis tfault-label" x="${xx + 3}" y="${H + 13}" font-size="9">${esc(name)}</text>`); lastLabel = xx; }
    });
    series.forEach(([name, , c], n) => {
      const pts = [];
      rates[n].forEach((v, k) => { pts.push(`${x(t0 + k * binNs).toFixed(1)},${y(v).toFixed(1)}`, `${x(t0 + (k + 1) * binNs).toFixed(1)},${y(v).toFixed(1)}`); });
      out.push(`<polyline class="rate" data-series="${name}" fill="none" stroke="${c}" stroke-width="1.5" points="${pts.join(" ")}"><title>${name}s per second</title></polyline>`);
    });
    out.push("</svg>");
    const faultKey = D.faults.length ? `<span><i class="sw" style="background:#ef6c00"></i>faults (${D.faults.length}; their heals lighter)</span>` : "";
    $("throughput-box").innerHTML = `<div class="legend">${series.map(([n, , c]) => `<span><i class="sw" style="background:${c}"></i>${n}s/s</span>`).join("")}${faultKey}</div>${out.join("")}
      <p class="muted">Rates over ${nbins} equal time bins of ${(binNs / 1e9).toFixed(3)}s; every event of the trace is counted, drawn or not.</p>`;
  }

  // -- wiring ------------------------------------------------------------------------------------------------------
  document.addEventListener("click", (ev) => {
    const t = ev.target.closest ? ev.target.closest("[data-v]") : null;
    if (!t) return;
    const n = Number(t.getAttribute("data-v"));
    if (t.matches("a.show, a.wit")) { ev.preventDefault(); focusViolation(n, true); }
    else if (t.matches(".vband, .witness")) { ev.preventDefault(); backToList(n); }
    else if (t.matches("article.violation")) { focusViolation(n, false); }
  });
  $("mode").addEventListener("change", (ev) => { state.mode = ev.target.value; drawTimeline(); });
  $("zoom-all").addEventListener("click", () => { state.view = whole(); drawTimeline(); });
  $("axis").addEventListener("change", (ev) => {
    state.axis = ev.target.value;
    if (state.focus != null) focusViolation(state.focus, false); else { state.view = whole(); drawTimeline(); }
  });
  window.addEventListener("resize", () => { drawTimeline(); drawRanges(); drawThroughput(); });
  drawVerdict(); drawLegend("timeline-legend"); drawViolations(); drawTimeline(); drawRanges(); drawThroughput();
  const linked = /^#v-(\d+)$/.exec(location.hash);  // a link to one violation: show it
  if (linked && D.violations[Number(linked[1])]) focusViolation(Number(linked[1]), true);
  document.body.setAttribute("data-ready", "1");
})();
