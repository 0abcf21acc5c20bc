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

  window.dash_clientside = Object.assign({}, window.dash_clientside, {
    attnscope_views: { detailHover: detailHover }
  });
})();
