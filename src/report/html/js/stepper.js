// stepper: a timeline figure walked event by event. Later steps are faded, the current one
// glows and its line is the caption; the last step shows the final state and verdict. The
// figure is one tab stop: its arrow keys step (Home, End, Space plays, P presents); its
// buttons are for the mouse. A figure whose picture is not loaded yet loads it first.
(function (book) {
  "use strict";
  var init = function (fig) {
    if (fig._ready) return;
    var n = parseInt(fig.getAttribute("data-steps"), 10) || 0;
    var stepper = fig.querySelector(".stepper");
    if (!stepper || n === 0 || !fig.querySelector(".figs[data-filled] svg")) return;
    fig._ready = true;
    var k = n; // everything shown until someone steps
    var timer = null;
    var range = stepper.querySelector("input[type=range]");
    var where = stepper.querySelector(".where");
    var caption = fig.querySelector(".caption");
    var detail = fig.querySelector(".detail");
    var play = stepper.querySelector("[data-act=play]");
    var link = stepper.querySelector("a.link");
    var marked = fig.querySelectorAll("svg [data-step]");
    var items = function () {
      return fig.querySelectorAll('ol.steps[lang="' + book.lang() + '"] > li');
    };
    var fillCaption = function (out, i) {
      var li = items()[i - 1];
      out.setAttribute("lang", book.lang());
      out.textContent = "";
      if (!li) return;
      var t = document.createElement("span");
      t.className = "t";
      t.textContent = "t = " + li.getAttribute("data-t") + " ms";
      var ev = document.createElement("span");
      ev.className = "ev";
      ev.textContent = li.textContent;
      out.appendChild(t);
      out.appendChild(ev);
    };
    var show = function () {
      marked.forEach(function (el) {
        var s = parseInt(el.getAttribute("data-step"), 10);
        el.classList.toggle("future", s > k);
        el.classList.toggle("now", s === k && k < n);
      });
      fig.querySelectorAll("ol.steps > li").forEach(function (li, i) {
        li.classList.toggle("now", (i % n) + 1 === k && k < n);
      });
      range.value = String(k);
      where.textContent = k + " / " + n;
      fillCaption(caption, k);
      if (link) link.setAttribute("href", book.linkTo(fig, k < n ? k : 0));
      fig.setAttribute("data-step-now", String(k));
    };
    fig._show = function () { detail.textContent = ""; show(); };
    var stop = function () {
      if (timer) { clearInterval(timer); timer = null; }
      play.setAttribute("aria-pressed", "false");
    };
    var go = function (to) {
      k = Math.max(1, Math.min(n, to));
      show();
      if (k === n) stop();
    };
    fig._go = function (to) { stop(); go(to); };
    fig._step = function (by) { stop(); go(k + by); };
    fig._play = function () {
      if (timer) { stop(); return; }
      if (k >= n) go(1);
      play.setAttribute("aria-pressed", "true");
      timer = setInterval(function () { go(k + 1); }, 900);
    };
    stepper.querySelector("[data-act=first]").addEventListener("click", function () { fig._go(1); });
    stepper.querySelector("[data-act=prev]").addEventListener("click", function () { fig._step(-1); });
    stepper.querySelector("[data-act=next]").addEventListener("click", function () { fig._step(1); });
    stepper.querySelector("[data-act=last]").addEventListener("click", function () { fig._go(n); });
    play.addEventListener("click", fig._play);
    range.addEventListener("input", function () { fig._go(parseInt(range.value, 10)); });
    fig.addEventListener("mouseover", function (e) {
      var el = e.target.closest ? e.target.closest("[data-step]") : null;
      if (el) fillCaption(detail, parseInt(el.getAttribute("data-step"), 10));
    });
    show();
  };
  book.initFigure = init;

  // A figure's keys; the first one on a figure not loaded loads it, then acts.
  var keys = { ArrowRight: 1, ArrowLeft: -1 };
  document.addEventListener("keydown", function (e) {
    var fig = e.target && e.target.closest ? e.target.closest("figure.timeline, figure.chart") : null;
    if (!fig || e.target.tagName === "INPUT" || e.altKey || e.ctrlKey || e.metaKey) return;
    var act = null;
    if (e.key in keys) act = function () { if (fig._step) fig._step(keys[e.key]); };
    else if (e.key === "Home") act = function () { if (fig._go) fig._go(1); };
    else if (e.key === "End") act = function () { if (fig._go) fig._go(1e9); };
    else if (e.key === " ") act = function () { if (fig._play) fig._play(); };
    else if (e.key === "p" || e.key === "P") act = function () { book.present(fig); };
    if (!act) return;
    e.preventDefault();
    book.need(fig).then(function () { init(fig); act(); });
  });
  // A click on a control of a figure not loaded yet: load it, then the click counts.
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("figure.timeline .stepper [data-act]") : null;
    if (!b) return;
    var fig = b.closest("figure");
    if (fig._ready) return;
    book.need(fig).then(function () { init(fig); b.click(); });
  });

  book.on("part", function (p) {
    p.filled.forEach(function (el) {
      var fig = el.closest("figure.timeline");
      if (fig) init(fig);
    });
  });
  book.on("lang", function () {
    document.querySelectorAll("figure.timeline").forEach(function (f) { if (f._show) f._show(); });
  });
})(ordlabBook);
