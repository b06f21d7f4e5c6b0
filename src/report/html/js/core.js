// ordlab lab book. Plain script, no dependencies, no network; one file per concern, joined in
// this order into the page: core (language, parts), links, summary, stepper, presenter,
// export, start.
//
// core: the page's language and its parts. A part (book/<name>.js) is a script that calls
// ordlabBook.part(name, {slot: html}); the page loads it when what it fills comes near the
// screen or is opened, so the first load stays light.
var ordlabBook = (function () {
  "use strict";
  var root = document.documentElement;
  var book = { root: root };
  var hooks = {};
  var loading = {};

  book.on = function (kind, fn) { (hooks[kind] = hooks[kind] || []).push(fn); };
  book.emit = function (kind, detail) { (hooks[kind] || []).forEach(function (fn) { fn(detail); }); };

  // Remembered choices (the language); nothing is stored where storage is refused.
  book.store = {
    get: function (k) { try { return window.localStorage.getItem("ordlab." + k); } catch (e) { return null; } },
    set: function (k, v) { try { window.localStorage.setItem("ordlab." + k, v); } catch (e) { /* not kept */ } }
  };

  // ---- language ---------------------------------------------------------------------------
  book.lang = function () { return root.getAttribute("data-lang") || "en"; };
  // `chosen`: the reader picked it (remembered for the next visit).
  book.setLang = function (lang, chosen) {
    if (lang !== "en" && lang !== "vi") return;
    root.setAttribute("data-lang", lang);
    root.setAttribute("lang", lang);
    document.querySelectorAll("option[data-" + lang + "]").forEach(function (o) {
      o.textContent = o.getAttribute("data-" + lang);
    });
    document.querySelectorAll("[data-label-" + lang + "]").forEach(function (el) {
      el.setAttribute("aria-label", el.getAttribute("data-label-" + lang));
    });
    document.querySelectorAll("[data-set-lang]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-set-lang") === lang));
    });
    if (chosen) book.store.set("lang", lang);
    book.emit("lang", lang);
  };

  // ---- parts ------------------------------------------------------------------------------
  // Fill the slots a part holds; every element filled is announced.
  book.part = function (name, slots) {
    var filled = [];
    Object.keys(slots).forEach(function (key) {
      document.querySelectorAll('[data-slot="' + key + '"]').forEach(function (el) {
        if (el.getAttribute("data-filled")) return;
        el.innerHTML = slots[key];
        el.setAttribute("data-filled", "1");
        filled.push(el);
      });
    });
    book.emit("part", { name: name, filled: filled });
  };

  // Load a part by its path (once); resolves when its slots are filled.
  book.load = function (src) {
    if (!loading[src]) {
      loading[src] = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { delete loading[src]; reject(new Error("cannot load " + src)); };
        document.head.appendChild(s);
      });
    }
    return loading[src];
  };

  // The part an element's slots need, unless every slot in it is filled already.
  book.need = function (el) {
    var holder = el.closest ? el.closest("[data-part]") : null;
    if (!holder) return Promise.resolve();
    var empty = holder.querySelector("[data-slot]:not([data-filled])");
    if (!empty) return Promise.resolve();
    return book.load(holder.getAttribute("data-part"));
  };

  // Every part of the page (to print it whole).
  book.needAll = function () {
    var all = [];
    document.querySelectorAll("[data-part]").forEach(function (el) { all.push(book.need(el)); });
    return Promise.all(all);
  };

  return book;
})();
