/* attnscope dashboard: clientside functions (loaded from /assets, no inline script, CSP-friendly). */
(function () {
  "use strict";
  var noUpdate = function () { return window.dash_clientside.no_update; };
  var tokenTimers = {};

  function plotDiv(graphId) {
    var box = document.getElementById(graphId);
    if (!box) { return null; }
    return box.classList.contains("js-plotly-plot") ? box : box.querySelector(".js-plotly-plot");
  }

  var TYPED = { f8: Float64Array, f4: Float32Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array,
    u2: Uint16Array, i4: Int32Array, u4: Uint32Array };

  function decode(spec) {  /* plotly's {dtype, bdata, shape} typed-array spec -> nested arrays */
    var bin = window.atob(spec.bdata);
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    var flat = Array.from(new TYPED[spec.dtype](bytes.buffer));
    if (!spec.shape) { return flat; }
    var dims = String(spec.shape).split(",").map(Number);
    if (dims.length < 2) { return flat; }
    var out = [];
    for (var r = 0; r < dims[0]; r++) { out.push(flat.slice(r * dims[1], (r + 1) * dims[1])); }
    return out;
  }

  function plain(a) {
    if (a === undefined || a === null) { return null; }
    if (a.bdata && a.dtype) { return decode(a); }
    if (ArrayBuffer.isView(a)) { return Array.from(a); }
    if (Array.isArray(a)) { return a.map(plain); }
    return a;
  }

  function save(blob, filename) {
    var url = URL.createObjectURL(blob);
    var link = document.createElement("a");
    link.href = url;
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 2000);
  }

  function csvCell(v) {
    var s = v === null || v === undefined ? "" : String(v);
    return /[",\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  }

  /* a heatmap axis's values as the tokens its ticks name, when every value has a tick */
  function tickLabels(axis, values) {
    if (!axis || !values || !axis.tickvals || !axis.ticktext) { return values; }
    var names = {};
    var text = function (label) {  /* the label's text without its markup (token_labels.py's grey marks) */
      /* DOMParser: an inert document (no script, no image load), unlike innerHTML */
      return new DOMParser().parseFromString(String(label), "text/html").body.textContent;
    };
    plain(axis.tickvals).forEach(function (v, i) { names[v] = text(axis.ticktext[i]); });
    var all = values.every(function (v) { return names[v] !== undefined; });
    return all ? values.map(function (v) { return names[v]; }) : values;
  }

  /* The figure's numbers: every trace's name, type, x, y and (heatmaps) z; a heatmap's x and y are
     its tokens where the figure names them (meta.labels, or ticks on every position). */
  function traces(gd) {
    var layout = gd.layout || {};
    var labels = (layout.meta && layout.meta.labels) || null;
    return (gd.data || []).filter(function (t) { return t.mode !== "text"; }).map(function (t) {
      var x = plain(t.x), y = plain(t.y);
      if (t.z && !x && labels) { x = labels.x; y = labels.y; }
      else if (t.z) { x = tickLabels(layout.xaxis, x); y = tickLabels(layout.yaxis, y); }
      return { name: t.name || null, type: t.type || "scatter", x: x, y: y, z: plain(t.z) };
    });
  }

  function toCsv(ts) {
    var heat = ts.filter(function (t) { return t.z; });
    var rows = [];
    if (heat.length === 1) {  // one matrix: its rows, with the axis labels
      var t = heat[0];
      var xs = t.x || t.z[0].map(function (_, j) { return j; });
      var ys = t.y || t.z.map(function (_, i) { return i; });
      rows.push([""].concat(xs).map(csvCell).join(","));
      t.z.forEach(function (row, i) { rows.push([ys[i]].concat(row).map(csvCell).join(",")); });
    } else {  // long format: one line per point of every trace
      rows.push("trace,x,y" + (heat.length ? ",z" : ""));
      ts.forEach(function (t, k) {
        var name = t.name || "trace " + k;
        if (t.z) {
          t.z.forEach(function (row, i) {
            row.forEach(function (v, j) {
              rows.push([name, t.x ? t.x[j] : j, t.y ? t.y[i] : i, v].map(csvCell).join(","));
            });
          });
        } else {
          (t.y || []).forEach(function (v, i) { rows.push([name, t.x ? t.x[i] : i, v].map(csvCell).join(",")); });
        }
      });
    }
    return rows.join("\n") + "\n";
  }

  /* NPY (version 1.0, little-endian float32): the first heatmap's matrix, else the traces' y
     stacked [trace, point] when they have one length, else the first trace's y. */
  function toNpy(ts) {
    var heat = ts.filter(function (t) { return t.z; });
    var rows;
    if (heat.length) { rows = heat[0].z; } else {
      var ys = ts.map(function (t) { return (t.y || []).map(Number); });
      var same = ys.every(function (y) { return y.length === ys[0].length; });
      rows = same ? ys : [ys[0] || []];
    }
    var shape = [rows.length, rows.length ? rows[0].length : 0];
    var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape[0] + ", " + shape[1] + "), }";
    var total = 10 + header.length + 1;
    header += " ".repeat((64 - (total % 64)) % 64) + "\n";
    var head = new Uint8Array(10 + header.length);
    head.set([0x93, 78, 85, 77, 80, 89, 1, 0]);
    head[8] = header.length & 0xff;
    head[9] = header.length >> 8;
    for (var i = 0; i < header.length; i++) { head[10 + i] = header.charCodeAt(i); }
    var body = new Float32Array(shape[0] * shape[1]);
    rows.forEach(function (row, r) {
      row.forEach(function (v, c) { body[r * shape[1] + c] = v === null ? NaN : Number(v); });
    });
    return new Blob([head, new Uint8Array(body.buffer)], { type: "application/octet-stream" });
  }

  function triggeredId() {
    var ctx = window.dash_clientside.callback_context;
    if (ctx.triggered_id) { return ctx.triggered_id; }
    var prop = ctx.triggered && ctx.triggered[0] && ctx.triggered[0].prop_id;
    return prop ? JSON.parse(prop.split(".")[0]) : null;
  }

  function gridImage(containerId, filename) {
    /* One PNG of every thumbnail in ``containerId`` (rows of .grid-row, images in order). */
    var box = document.getElementById(containerId);
    if (!box) { return; }
    var rows = Array.from(box.querySelectorAll(".grid-row")).map(function (r) {
      return Array.from(r.querySelectorAll("img"));
    }).filter(function (r) { return r.length; });
    if (!rows.length) { return; }
    var cell = 66, gap = 4, label = 40;
    var cols = Math.max.apply(null, rows.map(function (r) { return r.length; }));
    var canvas = document.createElement("canvas");
    canvas.width = label + cols * (cell + gap);
    canvas.height = rows.length * (cell + gap);
    var c2d = canvas.getContext("2d");
    c2d.fillStyle = "white";
    c2d.fillRect(0, 0, canvas.width, canvas.height);
    c2d.imageSmoothingEnabled = false;
    c2d.fillStyle = "#1d2330";
    c2d.font = "12px sans-serif";
    rows.forEach(function (r, i) {
      c2d.fillText("L" + i, 4, i * (cell + gap) + cell / 2 + 4);
      r.forEach(function (img, j) { c2d.drawImage(img, label + j * (cell + gap), i * (cell + gap), cell, cell); });
    });
    canvas.toBlob(function (blob) { save(blob, filename); }, "image/png");
  }

  /* Names for what Dash 4 renders without one (its components take no aria props):
     - a Checklist / RadioItems is a role=listbox div carrying the component's id: it is named by the
       page's <label for=id> (aria-labelledby), else by the title of the box around it (a pattern-matching
       id, a JSON object, has no <label for>; CSS.escape keeps its quotes out of the selector);
     - dcc.Upload's hidden <input type=file>: named by the upload box's title. */
  function nameControls() {
    document.querySelectorAll("[role=listbox][id]:not([aria-labelledby]):not([aria-label])").forEach(function (el) {
      var label = document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
      var box = el.parentElement && el.parentElement.closest("[title]");
      if (label) {
        if (!label.id) { label.id = el.id + "-label"; }
        el.setAttribute("aria-labelledby", label.id);
      } else if (box) {
        el.setAttribute("aria-label", box.title);
      }
    });
    document.querySelectorAll("input[type=file]:not([aria-label])").forEach(function (el) {
      var box = el.closest("[title]");
      el.setAttribute("aria-label", box ? box.title : "choose a file");
    });
  }
  /* Model view grid: the selected head outlined (aria-pressed), arrow keys move it. */
  function selectThumb(btn) {
    var grid = btn.closest(".model-grid") || document;
    grid.querySelectorAll(".head-thumb.selected").forEach(function (b) {
      b.classList.remove("selected");
      b.setAttribute("aria-pressed", "false");
    });
    btn.classList.add("selected");
    btn.setAttribute("aria-pressed", "true");
    rove(grid);
  }
  /* A grid is one tab stop (roving tabindex): its selected thumbnail (else its first) takes Tab, the
     others only arrow keys; a page of 72 or 270 heads no longer asks 72 or 270 presses of Tab. */
  function rove(grid) {
    var thumbs = grid.querySelectorAll(".head-thumb");
    if (!thumbs.length) { return; }
    var stop = grid.querySelector(".head-thumb.selected") || thumbs[0];
    thumbs.forEach(function (b) {
      var t = b === stop ? "0" : "-1";
      if (b.getAttribute("tabindex") !== t) { b.setAttribute("tabindex", t); }
    });
  }
  function roveGrids() { document.querySelectorAll(".model-grid").forEach(rove); }
  var STEP = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest(".head-thumb");
    if (!btn) { return; }
    selectThumb(btn);
    /* Explore's model view: the clicked head becomes the selected head (its detail and head view follow) */
    var grid = btn.closest("#model-grid"), tagged = grid && grid.querySelector("[data-run]");
    if (tagged && window.dash_clientside && window.dash_clientside.set_props) {
      window.dash_clientside.set_props("selected-head", { data: {
        layer: Number(btn.dataset.layer), head: Number(btn.dataset.head), run: tagged.dataset.run } });
    }
  });
  document.addEventListener("keydown", function (ev) {
    var btn = ev.target.closest && ev.target.closest(".head-thumb");
    var step = STEP[ev.key];
    if (!btn || !step) { return; }
    var grid = btn.closest(".model-grid") || document;
    var next;
    if (step[1]) {  /* left/right: the neighbour in the row as drawn (grouped-query grids: heads by kv group) */
      var row = Array.prototype.slice.call((btn.closest(".grid-row") || grid).querySelectorAll(".head-thumb"));
      next = row[row.indexOf(btn) + step[1]];
    } else {  /* up/down: the same head one layer up or down */
      var layer = Number(btn.dataset.layer) + step[0];
      next = grid.querySelector('.head-thumb[data-layer="' + layer + '"][data-head="' + btn.dataset.head + '"]');
    }
    ev.preventDefault();
    if (next) { next.focus(); next.click(); }
  });

  /* Hover a token: its lines in the head view stand out (the others fade); hover a cell of a head
     detail: its query row and key column are outlined. */
  function lineSegments(shape, i, side) {
    /* the lines of token i as query (side 0) or key (side 1) in a head-view shape ("M0,qL1,k" each) */
    var xs = [], ys = [], re = /M0,(\d+)L1,(\d+)/g, m;
    while ((m = re.exec(shape.path)) !== null) {
      if (+m[1 + side] === i) { xs.push(0, 1, null); ys.push(+m[1], +m[2], null); }
    }
    return { x: xs, y: ys };
  }
  function headViewHover(gd, ev) {
    var p = ev.points && ev.points[0];
    if (!p || p.data.mode !== "text") { return; }
    headViewClear(gd);
    var side = p.x === 0 ? 0 : 1, i = Math.round(p.y), overlays = [], dim = {}, before = [];
    (gd.layout.shapes || []).forEach(function (s, k) {
      if (s.type !== "path") { return; }
      before.push([k, s.opacity]);
      dim["shapes[" + k + "].opacity"] = 0.08;
      var seg = lineSegments(s, i, side);
      if (seg.x.length) {
        overlays.push({ x: seg.x, y: seg.y, mode: "lines", hoverinfo: "skip", showlegend: false, name: "__hover",
          line: { color: s.line.color, width: (s.line.width || 1) + 1.5 }, opacity: 1 });
      }
    });
    gd._attnDimmed = before;
    window.Plotly.relayout(gd, dim);
    if (overlays.length) { window.Plotly.addTraces(gd, overlays); }
  }
  function headViewClear(gd) {
    var extra = [], undo = {};
    gd.data.forEach(function (t, k) { if (t.name === "__hover") { extra.push(k); } });
    if (extra.length) { window.Plotly.deleteTraces(gd, extra); }
    (gd._attnDimmed || []).forEach(function (ko) { undo["shapes[" + ko[0] + "].opacity"] = ko[1]; });
    if (gd._attnDimmed && gd._attnDimmed.length) { window.Plotly.relayout(gd, undo); }
    gd._attnDimmed = null;
  }
  function detailHover(gd, ev) {
    var p = ev.points && ev.points[0];
    if (!p || p.data.type !== "heatmap") { return; }
    var line = { color: "#d62728", width: 2 };
    window.Plotly.relayout(gd, { shapes: [
      { type: "rect", xref: "paper", yref: "y", x0: 0, x1: 1, y0: p.y - 0.5, y1: p.y + 0.5, line: line, name: "row" },
      { type: "rect", xref: "x", yref: "paper", x0: p.x - 0.5, x1: p.x + 0.5, y0: 0, y1: 1, line: line, name: "col" }
    ] });
  }
  function wireHovers() {
    [["head-view", headViewHover, headViewClear], ["head-detail", detailHover, function (gd) {
      window.Plotly.relayout(gd, { shapes: [] });
    }]].forEach(function (spec) {
      var gd = plotDiv(spec[0]);
      if (!gd || gd._attnHover || !gd.on) { return; }
      gd._attnHover = true;
      gd.on("plotly_hover", function (ev) { spec[1](gd, ev); });
      gd.on("plotly_unhover", function () { spec[2](gd); });
    });
  }

  var pending = false;
  function schedule() {
    if (pending) { return; }
    pending = true;
    window.requestAnimationFrame(function () { pending = false; nameControls(); wireHovers(); roveGrids(); });
  }
  function watch() {
    nameControls();
    roveGrids();
    new MutationObserver(schedule).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", watch); } else { watch(); }

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    attnscope: {
      /* the page's state -> the address bar, without a reload (back/forward re-open it) */
      replaceQuery: function (search) {
        if (search === null || search === undefined) { return noUpdate(); }
        var url = window.location.pathname + search;
        if (url !== window.location.pathname + window.location.search) {
          window.history.replaceState(window.history.state, "", url);
        }
        return search;
      },
      /* the head detail's relayouts that are zooms or resets (axis ranges), nothing else: the hover
         outline is a relayout too, and a server callback on every relayout would supersede a zoom's
         fetch still in flight (Dash keeps only the newest answer of a callback) */
      zoomOnly: function (relayout) {
        if (!relayout) { return noUpdate(); }
        var keys = Object.keys(relayout).filter(function (k) { return /^[xy]axis\.(range|autorange)/.test(k); });
        if (!keys.length) { return noUpdate(); }
        var out = {};
        keys.forEach(function (k) { out[k] = relayout[k]; });
        return out;
      },
      exportFigure: function () {
        var id = triggeredId();
        if (!id) { return noUpdate(); }
        var gd = plotDiv(id.graph);
        if (!gd || !gd.data) { return noUpdate(); }
        var name = "attnscope-" + id.graph;
        if (id.fmt === "svg" || id.fmt === "png") {
          var size = gd._fullLayout || {};
          window.Plotly.downloadImage(gd, { format: id.fmt, filename: name, width: size.width, height: size.height });
        } else if (id.fmt === "json") {
          var title = gd.layout && gd.layout.title;
          save(new Blob([JSON.stringify({ title: title && title.text ? title.text : title || null, traces: traces(gd) })],
            { type: "application/json" }), name + ".json");
        } else if (id.fmt === "csv") {
          save(new Blob([toCsv(traces(gd))], { type: "text/csv" }), name + ".csv");
        } else if (id.fmt === "npy") {
          save(toNpy(traces(gd)), name + ".npy");
        }
        return id.fmt + " " + Date.now();
      },
      /* a step-by-step job ({next, n, error}): ask for step ``next`` by setting ``storeId``'s data */
      /* the token counter: the text and model once typing has paused (token_counter.DEBOUNCE_MS) */
      debounceTokens: function (text, model, storeId, delayMs) {
        clearTimeout(tokenTimers[storeId]);
        tokenTimers[storeId] = setTimeout(function () {
          window.dash_clientside.set_props(storeId, { data: { text: text || "", model: model || null } });
        }, delayMs || 400);
        return noUpdate();
      },
      /* stale_note.py: the results on screen are of a run made from another text or model */
      staleNote: function (text, model, run) {
        if (!run || !run.model) { return ["", "notice empty"]; }
        var why = [];
        if (model && model !== run.model) { why.push("model " + run.model); }
        if ((text || "").trim() !== (run.text || "").trim()) { why.push("the earlier text"); }
        if (!why.length) { return ["", "notice empty"]; }
        return ["Stale: the results below are of run " + run.id + " (" + why.join(", ") +
          "), not of the text and model above. Press Run to update them.", "notice stale"];
      },
      /* stale_note.counterfactual_link: Compare with the shown run's text (A) and its edit (B), same model */
      counterfactualLink: function (text, model, run) {
        var edited = (text || "").trim();
        if (!run || !run.model || (model && model !== run.model) || !edited ||
            edited === (run.text || "").trim()) { return ["/compare", "counterfactual-link empty"]; }
        var q = new URLSearchParams({ model_a: run.model, text_a: run.text, model_b: run.model, text_b: edited });
        return ["/compare?" + q.toString(), "counterfactual-link"];
      },
      nextStep: function (state, storeId) {
        if (!state || state.error || state.next >= state.n) { return noUpdate(); }
        setTimeout(function () { window.dash_clientside.set_props(storeId, { data: state.next }); }, 0);
        return state.next;
      },
      gridImage: function (nClicks, containerId) {
        if (!nClicks) { return noUpdate(); }
        gridImage(containerId, "attnscope-" + containerId + ".png");
        return Date.now();
      }
    }
  });
})();
