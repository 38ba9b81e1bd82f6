(function () {
  "use strict";
  // Sortable tables: click (or Enter on) a column heading. Cells carry
  // their raw value in data-v; empty cells sort last.
  var each = function (list, f) { Array.prototype.forEach.call(list, f); };
  each(document.querySelectorAll("table.tk-table"), function (t) {
    if (!t.tHead || !t.tBodies.length) return;
    var ths = t.tHead.rows[0].cells;
    each(ths, function (th, i) {
      th.tabIndex = 0;
      th.classList.add("tk-sortable");
      var num = th.classList.contains("num");
      var key = function (row) {
        var c = row.cells[i];
        if (!c || !c.hasAttribute("data-v")) return null;
        var v = c.getAttribute("data-v");
        return num ? parseFloat(v) : v.toLowerCase();
      };
      var sort = function () {
        var desc = th.getAttribute("aria-sort") === "descending" ? false
          : th.getAttribute("aria-sort") === "ascending" ? true : num;
        var body = t.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
          var o = x < y ? -1 : x > y ? 1 : 0;
          return desc ? -o : o;
        });
        rows.forEach(function (r) { body.appendChild(r); });
        each(ths, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
      });
    });
  });
  // Flame graphs: click a frame to zoom into it, click the root to zoom out.
  each(document.querySelectorAll("svg.tk-flame"), function (svg) {
    var w = parseFloat(svg.getAttribute("data-w"));
    var frames = svg.querySelectorAll("g[data-x]");
    var zoom = function (x0, x1, d0) {
      var k = w / (x1 - x0);
      each(frames, function (g) {
        var x = parseFloat(g.getAttribute("data-x")), fw = parseFloat(g.getAttribute("data-fw"));
        var d = parseInt(g.getAttribute("data-d"), 10);
        var r = g.querySelector("rect"), tx = g.querySelector("text");
        var inside = x >= x0 - 1e-6 && x + fw <= x1 + 1e-6 || d < d0;
        var nx = d < d0 ? 0 : (x - x0) * k, nw = d < d0 ? w : fw * k;
        g.style.display = inside && nw >= 0.3 ? "" : "none";
        r.setAttribute("x", nx.toFixed(1));
        r.setAttribute("width", Math.max(nw, 0.3).toFixed(1));
        if (tx) {
          var label = g.getAttribute("data-n"), fit = Math.floor((nw - 6) / 6.4);
          tx.setAttribute("x", (nx + 3).toFixed(1));
          tx.textContent = fit < 2 ? "" : label.length <= fit ? label : label.slice(0, fit - 1) + "…";
        }
      });
    };
    each(frames, function (g) {
      g.style.cursor = "pointer";
      g.addEventListener("click", function () {
        var x = parseFloat(g.getAttribute("data-x")), fw = parseFloat(g.getAttribute("data-fw"));
        zoom(x, x + fw, parseInt(g.getAttribute("data-d"), 10));
      });
    });
  });
})();
