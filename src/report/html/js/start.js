// start: the page's language (a link's, else the reader's last choice, else the page's own),
// the language buttons, the parts loaded as their labs come near the screen or are opened,
// and the place a link names.
(function (book) {
  "use strict";
  var link = book.parseHash(location.hash);
  book.setLang(link.lang || book.store.get("lang") || book.lang(), false);
  document.querySelectorAll("[data-set-lang]").forEach(function (b) {
    b.addEventListener("click", function () {
      var lang = b.getAttribute("data-set-lang");
      book.setLang(lang, true);
      history.replaceState(null, "", book.keepTarget(lang));
    });
  });
  // A lab's part loads as the lab comes within a screen or two of the view.
  if ("IntersectionObserver" in window) {
    var seen = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        seen.unobserve(e.target);
        book.need(e.target).catch(function () { /* said on the figure when it is used */ });
      });
    }, { rootMargin: "1500px 0px" });
    document.querySelectorAll("section.lab[data-part]").forEach(function (s) { seen.observe(s); });
  }
  document.addEventListener("focusin", function (e) {
    var fig = e.target.closest ? e.target.closest("figure[tabindex]") : null;
    if (fig) book.need(fig);
  });
  document.querySelectorAll("details.open-classes").forEach(function (d) {
    d.addEventListener("toggle", function () { if (d.open) book.need(d); });
  });
  // A standalone page has its pictures inline.
  document.querySelectorAll("figure.timeline").forEach(function (f) { book.initFigure(f); });
  if (link.target) book.follow(location.hash);
})(ordlabBook);
