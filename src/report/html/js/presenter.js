// presenter: one figure full screen, in large type, for a projector. P on a figure (or its
// button) presents it; the arrow keys step it; Escape, P or the button again end it.
(function (book) {
  "use strict";
  var root = book.root;
  var current = null;
  var before = null;
  book.present = function (fig) {
    if (current === fig) { book.endPresenting(); return; }
    if (current) book.endPresenting();
    before = document.activeElement;
    current = fig;
    book.need(fig).then(function () {
      if (book.initFigure) book.initFigure(fig);
      root.classList.add("presenting");
      fig.classList.add("presented");
      fig.focus({ preventScroll: true });
      var gesture = !navigator.userActivation || navigator.userActivation.isActive;
      if (gesture && fig.requestFullscreen && !document.fullscreenElement) {
        fig.requestFullscreen().catch(function () { /* the overlay alone will do */ });
      }
      book.emit("present", fig);
    });
  };
  book.endPresenting = function () {
    if (!current) return;
    var fig = current;
    current = null;
    root.classList.remove("presenting");
    fig.classList.remove("presented");
    if (document.fullscreenElement && document.exitFullscreen) document.exitFullscreen().catch(function () {});
    if (before && before.focus) before.focus({ preventScroll: true });
    fig.scrollIntoView({ block: "center" });
    book.emit("present", null);
  };
  document.addEventListener("keydown", function (e) {
    if (current && e.key === "Escape") { e.preventDefault(); book.endPresenting(); }
  });
  document.addEventListener("fullscreenchange", function () {
    if (!document.fullscreenElement && current) book.endPresenting();
  });
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button.present") : null;
    if (b) book.present(b.closest("figure"));
  });
})(ordlabBook);
