// ordlab lab book: language switch, summary filters and sorting, step-through timelines.
// Plain script, no dependencies, no network.
(function () {
  "use strict";
  var root = document.documentElement;

  // ---- language -------------------------------------------------------------------------
  function setLang(lang) {
    if (lang !== "en" && lang !== "vi") return;
    root.setAttribute("data-lang", lang);
    root.setAttribute("lang", lang);
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-set-lang") === lang));
    });
    document.querySelectorAll("figure.timeline").forEach(function (f) { if (f._show) f._show(); });
  }
  document.querySelectorAll("[data-set-lang]").forEach(function (b) {
    b.addEventListener("click", function () {
      var lang = b.getAttribute("data-set-lang");
      setLang(lang);
      history.replaceState(null, "", "#" + lang);
    });
  });
  function currentLang() { return root.getAttribute("data-lang") || "en"; }

  // ---- summary: filter and sort -----------------------------------------------------------
  var table = document.querySelector("table.summary");
  if (table) {
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
  }

  // ---- step-through timelines ------------------------------------------------------------
  document.querySelectorAll("figure.timeline").forEach(function (fig) {
    var n = parseInt(fig.getAttribute("data-steps"), 10) || 0;
    var stepper = fig.querySelector(".stepper");
    if (!stepper || n === 0) return;
    var k = n; // everything shown until someone steps
    var timer = null;
    var range = stepper.querySelector("input[type=range]");
    var where = stepper.querySelector(".where");
    var caption = fig.querySelector(".caption");
    var detail = fig.querySelector(".detail");
    var play = stepper.querySelector("[data-act=play]");
    var marked = fig.querySelectorAll("svg [data-step]");
    var items = function () {
      return fig.querySelectorAll('ol.steps[lang="' + currentLang() + '"] > li');
    };
    var words = function (li) {
      var t = li.getAttribute("data-t");
      return '<span class="t">t = ' + t + " ms</span>" + '<span class="ev"></span>';
    };
    var fillCaption = function (out, i) {
      var li = items()[i - 1];
      out.setAttribute("lang", currentLang());
      if (!li) { out.textContent = ""; return; }
      out.innerHTML = words(li);
      out.querySelector(".ev").textContent = li.textContent;
    };
    var show = function () {
      marked.forEach(function (el) {
        var s = parseInt(el.getAttribute("data-step"), 10);
        el.classList.toggle("future", s > k);
        el.classList.toggle("now", s === k && k < n);
      });
      fig.querySelectorAll("ol.steps > li").forEach(function (li, i, all) {
        li.classList.toggle("now", (i % n) + 1 === k && k < n);
      });
      range.value = String(k);
      where.textContent = k + " / " + n;
      fillCaption(caption, k);
    };
    fig._show = function () { detail.textContent = ""; show(); };
    var go = function (to) {
      k = Math.max(1, Math.min(n, to));
      show();
      if (k === n) stop();
    };
    var stop = function () {
      if (timer) { clearInterval(timer); timer = null; }
      play.setAttribute("aria-pressed", "false");
    };
    stepper.querySelector("[data-act=first]").addEventListener("click", function () { stop(); go(1); });
    stepper.querySelector("[data-act=prev]").addEventListener("click", function () { stop(); go(k - 1); });
    stepper.querySelector("[data-act=next]").addEventListener("click", function () { stop(); go(k + 1); });
    stepper.querySelector("[data-act=last]").addEventListener("click", function () { stop(); go(n); });
    play.addEventListener("click", function () {
      if (timer) { stop(); return; }
      if (k >= n) go(1);
      play.setAttribute("aria-pressed", "true");
      timer = setInterval(function () { go(k + 1); }, 900);
    });
    range.addEventListener("input", function () { stop(); go(parseInt(range.value, 10)); });
    fig.addEventListener("keydown", function (e) {
      if (e.target.tagName === "INPUT") return;
      if (e.key === "ArrowRight") { e.preventDefault(); stop(); go(k + 1); }
      if (e.key === "ArrowLeft") { e.preventDefault(); stop(); go(k - 1); }
    });
    var explain = function (e) {
      var el = e.target.closest ? e.target.closest("[data-step]") : null;
      if (el) fillCaption(detail, parseInt(el.getAttribute("data-step"), 10));
    };
    fig.addEventListener("mouseover", explain);
    fig.addEventListener("focusin", explain);
    show();
  });

  // ---- a figure as a slide-sized PNG, drawn by the browser from the inline SVG -------------
  document.querySelectorAll("button.pngbtn").forEach(function (b) {
    b.addEventListener("click", function () {
      var fig = b.closest("figure");
      var svg = fig.querySelector('.fig[lang="' + currentLang() + '"] svg') || fig.querySelector(".fig svg");
      var copy = svg.cloneNode(true);
      copy.querySelectorAll(".future, .now").forEach(function (el) { el.classList.remove("future", "now"); });
      var w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
      var scale = Math.min(1600 / w, 900 / h);
      var url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(copy)], { type: "image/svg+xml" }));
      var img = new Image();
      img.onload = function () {
        var c = document.createElement("canvas");
        c.width = Math.round(w * scale); c.height = Math.round(h * scale);
        var g = c.getContext("2d");
        g.fillStyle = "white"; g.fillRect(0, 0, c.width, c.height);
        g.drawImage(img, 0, 0, c.width, c.height);
        URL.revokeObjectURL(url);
        c.toBlob(function (png) {
          var a = document.createElement("a");
          a.href = URL.createObjectURL(png);
          a.download = (fig.id || "figure") + "-" + currentLang() + ".png";
          a.click();
        }, "image/png");
      };
      img.src = url;
    });
  });

  var fromHash = location.hash.replace("#", "");
  setLang(fromHash === "vi" || fromHash === "en" ? fromHash : currentLang());
})();
