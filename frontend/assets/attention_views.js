/* attnscope dashboard: clientside functions of the attention views (head detail hover).
   The head detail's weights arrive as one binary array inside the figure; the hover readout is
   computed here from that array and the run's tokens, so no per-cell hover text is ever sent. */
(function () {
  "use strict";

  function label(tokens, lo, hi) {  /* the token at lo, or "lo-hi: first ... last" for a pooled block */
    if (hi <= lo) { return tokens[lo] + " (" + lo + ")"; }
    return tokens[lo] + " ... " + tokens[hi] + " (" + lo + "-" + hi + ")";
  }

  function detailHover(hover, figure, run) {
    if (!hover || !hover.points || !hover.points.length || !run || !figure) { return ""; }
    var p = hover.points[0];
    var meta = (figure.layout && figure.layout.meta) || {};
    var stride = meta.stride || 1;
    var tokens = run.tokens || [];
    var n = tokens.length;
    var half = (stride - 1) / 2;
    var q0 = Math.max(0, Math.round(p.y - half)), q1 = Math.min(n - 1, Math.round(p.y + half));
    var k0 = Math.max(0, Math.round(p.x - half)), k1 = Math.min(n - 1, Math.round(p.x + half));
    var w = typeof p.z === "number" ? p.z.toFixed(5) : String(p.z);
    var what = (stride > 1 ? "max " : "") + (meta.value || "weight") + " ";  /* the scaling's value */
    return label(tokens, q0, q1) + " \u2192 " + label(tokens, k0, k1) + " \u00b7 " + what + w;
  }

  /* The token-centred view (frontend/token_view.py): the run's tokens as focusable spans, coloured by
     the weights the server sent for the focused token. One tab stop (roving tabindex), arrow keys move,
     Enter/Space/click lock, Escape unlocks; hover or focus shows a token while nothing is locked. */
  var tokenState = { query: null, locked: false };
  var hoverTimer = null;
  var INK = [8, 81, 156];  /* the colour of weight 1 (over white) */

  function showToken(i, locked) {
    tokenState = { query: i, locked: locked };
    window.dash_clientside.set_props("token-focus", { data: { query: i, locked: locked } });
  }

  function preview(i) {
    if (tokenState.locked || tokenState.query === i) { return; }
    clearTimeout(hoverTimer);
    hoverTimer = setTimeout(function () { if (!tokenState.locked) { showToken(i, false); } }, 120);
  }

  function toggle(i) {
    clearTimeout(hoverTimer);
    if (tokenState.locked && tokenState.query === i) { showToken(i, false); } else { showToken(i, true); }
  }

  function tokenText(token) { return String(token).replace(/␣/g, " "); }

  function buildTokens(box, run) {
    box.textContent = "";
    (run.tokens || []).forEach(function (token, i) {
      var span = document.createElement("span");
      span.className = "tv-tok";
      span.textContent = tokenText(token);
      span.dataset.i = String(i);
      span.setAttribute("role", "button");
      span.setAttribute("aria-pressed", "false");
      span.tabIndex = i === 0 ? 0 : -1;
      box.appendChild(span);
    });
    box.dataset.run = run.id;
  }

  function luminance(rgb) {
    var c = rgb.map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  }

  function paint(box, data, run) {
    var spans = box.children, weights = data && data.run === run.id ? data.weights : null;
    var top = 0;
    (weights || []).forEach(function (w) { if (w !== null && w > top) { top = w; } });
    for (var i = 0; i < spans.length; i++) {
      var span = spans[i], w = weights ? weights[i] : null, label = (run.tokens || [])[i] + "@" + i;
      span.classList.toggle("tv-hidden", !!weights && w === null);
      span.classList.toggle("tv-focus", !!weights && data.focus === i);
      span.classList.toggle("tv-locked", !!weights && data.focus === i && data.locked);
      span.setAttribute("aria-pressed", weights && data.focus === i && data.locked ? "true" : "false");
      if (!weights || w === null || top <= 0) {
        span.style.backgroundColor = "";
        span.style.color = "";
        span.title = weights && w === null ? label + " · hidden" : label;
        continue;
      }
      var a = w / top;
      var rgb = INK.map(function (v) { return Math.round(255 - a * (255 - v)); });
      span.style.backgroundColor = "rgb(" + rgb.join(",") + ")";
      span.style.color = luminance(rgb) > 0.179 ? "#000000" : "#ffffff";  /* >= 4.5:1 either way */
      span.title = label + " \u00b7 " + w.toFixed(4);
    }
    if (data && data.run === run.id && data.focus !== null) {
      tokenState = { query: data.focus, locked: !!data.locked };
      var current = spans[data.focus];
      if (current && current.tabIndex !== 0) {
        Array.prototype.forEach.call(box.querySelectorAll(".tv-tok[tabindex='0']"), function (s) { s.tabIndex = -1; });
        current.tabIndex = 0;
      }
    }
  }

  /* The tokens are built and painted once the box is near the screen: a 4,096-token text is 4,096
     elements to lay out, work the page's first draw need not do for a panel below the fold. */
  var pendingView = null;
  function draw(box, data, run) {
    if (box.dataset.run !== run.id) { buildTokens(box, run); }
    paint(box, data, run);
  }
  function watchBox(box) {
    if (box._attnObserved) { return; }
    box._attnObserved = true;
    new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        box._attnVisible = e.isIntersecting;
        if (e.isIntersecting && pendingView) { var v = pendingView; pendingView = null; draw(box, v[0], v[1]); }
      });
    }, { rootMargin: "600px 0px" }).observe(box);
  }

  function tokenView(data, run) {
    var box = document.getElementById("token-text");
    if (!box || !run || !run.tokens) { if (box) { box.textContent = ""; box.dataset.run = ""; } return ""; }
    watchBox(box);
    if (box._attnVisible) { draw(box, data, run); } else { pendingView = [data, run]; }
    return data && data.run === run.id ? data.summary || "" : "";
  }

  function tokenOf(ev) { return ev.target.closest ? ev.target.closest("#token-text .tv-tok") : null; }
  document.addEventListener("mouseover", function (ev) { var t = tokenOf(ev); if (t) { preview(+t.dataset.i); } });
  document.addEventListener("focusin", function (ev) { var t = tokenOf(ev); if (t) { preview(+t.dataset.i); } });
  document.addEventListener("click", function (ev) { var t = tokenOf(ev); if (t) { toggle(+t.dataset.i); } });
  document.addEventListener("keydown", function (ev) {
    var t = tokenOf(ev);
    if (!t) { return; }
    var i = +t.dataset.i, spans = t.parentNode.children, next = null;
    if (ev.key === "Enter" || ev.key === " ") { toggle(i); }
    else if (ev.key === "Escape") { if (tokenState.locked) { showToken(tokenState.query, false); } }
    else if (ev.key === "ArrowRight" || ev.key === "ArrowDown") { next = spans[i + 1]; }
    else if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") { next = spans[i - 1]; }
    else if (ev.key === "Home") { next = spans[0]; }
    else if (ev.key === "End") { next = spans[spans.length - 1]; }
    else { return; }
    ev.preventDefault();
    if (next) { t.tabIndex = -1; next.tabIndex = 0; next.focus(); }
  });

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    attnscope_views: { detailHover: detailHover, tokenView: tokenView }
  });
})();
