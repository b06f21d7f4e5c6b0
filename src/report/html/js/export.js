// export: a figure as a slide-sized PNG (drawn by the browser from its picture), and printing —
// every lab (one per page when asked), one lab, or one lab as slides (a figure per 16:9 page,
// to save as PDF). Printing loads every part it prints first.
(function (book) {
  "use strict";
  var root = book.root;
  var png = function (fig) {
    var svg = fig.querySelector('.fig[lang="' + book.lang() + '"] svg') || fig.querySelector(".fig svg");
    if (!svg) return;
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
      c.toBlob(function (blob) {
        var a = document.createElement("a");
        a.href = URL.createObjectURL(blob);
        a.download = (fig.id || "figure") + "-" + book.lang() + ".png";
        a.click();
      }, "image/png");
    };
    img.src = url;
  };
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button.pngbtn") : null;
    if (b) { var fig = b.closest("figure"); book.need(fig).then(function () { png(fig); }); }
  });

  // What a print shows: `all` (every lab), `lab` or `slides` (the lab `section`).
  book.preparePrint = function (mode, section) {
    book.endPrint();
    var loaded = mode === "all" ? book.needAll() : book.need(section);
    return loaded.then(function () {
      document.querySelectorAll("figure.timeline").forEach(function (f) { if (book.initFigure) book.initFigure(f); });
      root.classList.add("print-" + mode);
      var perPage = document.getElementById("print-per-page");
      root.classList.toggle("per-page", mode !== "all" || !perPage || perPage.checked);
      if (section) section.classList.add("printing");
    });
  };
  book.endPrint = function () {
    ["print-all", "print-lab", "print-slides", "per-page"].forEach(function (c) { root.classList.remove(c); });
    document.querySelectorAll("section.printing").forEach(function (s) { s.classList.remove("printing"); });
  };
  window.addEventListener("afterprint", function () { book.endPrint(); });
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("[data-print]") : null;
    if (!b) return;
    var mode = b.getAttribute("data-print");
    book.preparePrint(mode, b.closest("section.lab")).then(function () { window.print(); });
  });
})(ordlabBook);
