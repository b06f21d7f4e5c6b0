// links: a link names a lab, a variant's figure and a step, and the language, all in the
// fragment so that it works from a file as from a server: #lab-lock, #lock-s4c/step-3?lang=vi.
// Switching the language keeps what the link names (#lab-lock?lang=vi), never replaces it.
(function (book) {
  "use strict";
  book.parseHash = function (hash) {
    var h = decodeURIComponent((hash || "").replace(/^#/, ""));
    var out = { target: "", step: 0, lang: "" };
    var q = h.indexOf("?");
    if (q >= 0) {
      h.slice(q + 1).split("&").forEach(function (kv) {
        var p = kv.split("=");
        if (p[0] === "lang") out.lang = p[1] || "";
      });
      h = h.slice(0, q);
    }
    if (h === "en" || h === "vi") { out.lang = out.lang || h; h = ""; }
    var s = h.match(/^(.*)\/step-(\d+)$/);
    if (s) { h = s[1]; out.step = parseInt(s[2], 10); }
    out.target = h;
    return out;
  };

  // The element a link's target names: an id, or a variant's figure (`lock-s4c`).
  book.resolve = function (target) {
    if (!target) return null;
    return document.getElementById(target) || document.getElementById("fig-" + target) ||
      document.getElementById("v-" + target) || document.getElementById("lab-" + target);
  };

  // The link to `el` (a figure at step `step`), in the page's language.
  book.linkTo = function (el, step) {
    var id = el ? el.id : "";
    if (id.indexOf("fig-") === 0) id = id.slice(4);
    return "#" + id + (step ? "/step-" + step : "") + "?lang=" + book.lang();
  };

  // The fragment with its target kept and the language replaced.
  book.keepTarget = function (lang) {
    var now = book.parseHash(location.hash);
    var path = now.target + (now.step ? "/step-" + now.step : "");
    return "#" + path + "?lang=" + lang;
  };

  // Go where a fragment says: its language, then its target (loading its part), its step.
  book.follow = function (hash) {
    var link = book.parseHash(hash);
    if (link.lang) book.setLang(link.lang, false);
    var el = book.resolve(link.target);
    if (!el) return Promise.resolve(null);
    return book.need(el).then(function () {
      if (el.matches("figure.timeline") && link.step && el._go) el._go(link.step);
      el.scrollIntoView({ block: "start" });
      if (el.matches("figure")) el.focus({ preventScroll: true });
      return el;
    });
  };

  window.addEventListener("hashchange", function () { book.follow(location.hash); });
})(ordlabBook);
