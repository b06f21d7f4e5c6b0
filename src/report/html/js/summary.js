// summary: the table filtered by family, strategy and words, and sorted by a column.
(function (book) {
  "use strict";
  var table = document.querySelector("table.summary");
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var family = document.getElementById("f-family");
  var strategy = document.getElementById("f-strategy");
  var text = document.getElementById("f-text");
  var count = document.querySelector(".count .shown");
  var filter = function () {
    var f = family ? family.value : "", s = strategy ? strategy.value : "";
    var q = text ? text.value.trim().toLowerCase() : "";
    var shown = 0;
    rows.forEach(function (r) {
      var ok = (!f || r.getAttribute("data-family") === f) &&
        (!s || r.getAttribute("data-strategy") === s) &&
        (!q || r.textContent.toLowerCase().indexOf(q) >= 0);
      r.hidden = !ok;
      if (ok) shown++;
    });
    if (count) count.textContent = String(shown);
  };
  [family, strategy].forEach(function (el) { if (el) el.addEventListener("change", filter); });
  if (text) text.addEventListener("input", filter);
  var heads = table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads, function (th, col) {
    if (!th.hasAttribute("data-sort")) return;
    th.tabIndex = 0;
    var sort = function () {
      var asc = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      var numeric = th.getAttribute("data-sort") === "num";
      var key = function (r) {
        var c = r.cells[col], v = c.hasAttribute("data-v") ? c.getAttribute("data-v") : c.textContent;
        return numeric ? parseFloat(v) : v.toLowerCase();
      };
      var sorted = rows.slice().sort(function (a, b) {
        var x = key(a), y = key(b);
        if (numeric && isNaN(x)) return 1;
        if (numeric && isNaN(y)) return -1;
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      sorted.forEach(function (r) { body.appendChild(r); });
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
  });
})(ordlabBook);
