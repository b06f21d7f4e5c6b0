// ordlab serve: a "run again" button per variant, and a "replay" button per explored class.
// A click asks the server to run the variant once on this machine's servers, or to replay the
// class's schedule exactly (POST run); the answer is a stream of Server-Sent Events,
// one per timeline line as the run records it, then the verdict. Each line and the verdict
// note when they arrived (data-arrived, ms since the page loaded). Each request carries the
// token the server wrote into this page (meta ordlab-token): the server answers no other.
(function () {
  "use strict";
  var running = false;
  var tokenMeta = document.querySelector("meta[name=ordlab-token]");
  var token = tokenMeta ? tokenMeta.getAttribute("content") : "";
  var both = function (el, en, vi) {
    el.textContent = "";
    [["en", en], ["vi", vi]].forEach(function (p) {
      var s = document.createElement("span");
      s.setAttribute("lang", p[0]);
      s.textContent = p[1];
      el.appendChild(s);
    });
  };
  var buttons = [];
  // A run box: its button, state, live lines and verdict, put in place by `place`; a click
  // runs `variant` of `lab` (or replays `schedule`, a saved class of its exploration).
  var runBox = function (place, lab, variant, schedule, label) {
    var box = document.createElement("div");
    box.className = "live";
    var button = document.createElement("button");
    button.type = "button";
    button.className = "run";
    both(button, label[0], label[1]);
    var state = document.createElement("span");
    state.className = "state";
    state.setAttribute("aria-live", "polite");
    var list = document.createElement("ol");
    list.className = "live-events";
    var verdict = document.createElement("div");
    verdict.className = "live-verdict";
    verdict.hidden = true;
    box.appendChild(button);
    box.appendChild(state);
    box.appendChild(list);
    box.appendChild(verdict);
    place(box);
    buttons.push(button);

    var line = function (m) {
      var li = document.createElement("li");
      li.setAttribute("data-seq", String(m.seq));
      li.setAttribute("data-arrived", String(performance.now()));
      var t = document.createElement("span");
      t.className = "t";
      t.setAttribute("translate", "no");
      t.textContent = "+" + m.t_ms + " ms";
      li.appendChild(t);
      var words = document.createElement("span");
      both(words, m.en, m.vi);
      li.appendChild(words);
      list.appendChild(li);
      list.scrollTop = list.scrollHeight;
    };
    var end = function (m, failed) {
      verdict.setAttribute("data-arrived", String(performance.now()));
      verdict.className = "live-verdict " + (failed ? "failed" : m.matched ? "matched" : "mismatch");
      verdict.textContent = "";
      [["en", failed ? m.line : m.en], ["vi", failed ? m.line : m.vi]].forEach(function (p) {
        var pre = document.createElement("pre");
        pre.setAttribute("lang", p[0]);
        pre.textContent = p[1];
        verdict.appendChild(pre);
      });
      verdict.hidden = false;
      if (failed) both(state, "the run failed", "lần chạy thất bại");
      else both(state, "done: " + list.children.length + " lines", "xong: " + list.children.length + " dòng");
    };
    var handle = function (block) {
      var kind = "message", data = "";
      block.split("\n").forEach(function (l) {
        if (l.indexOf("event: ") === 0) kind = l.slice(7);
        if (l.indexOf("data: ") === 0) data += l.slice(6);
      });
      if (!data) return;
      var m = JSON.parse(data);
      if (kind === "line") line(m);
      else if (kind === "verdict") end(m, false);
      else if (kind === "failed") end(m, true);
    };
    var done = function () {
      running = false;
      buttons.forEach(function (b) { b.disabled = false; });
    };
    button.addEventListener("click", function () {
      if (running) return;
      running = true;
      buttons.forEach(function (b) { b.disabled = true; });
      list.textContent = "";
      verdict.hidden = true;
      verdict.removeAttribute("data-arrived");
      both(state, "running on this machine's servers…", "đang chạy trên các server của máy này…");
      var body = "lab=" + encodeURIComponent(lab) + "&variant=" + encodeURIComponent(variant);
      if (schedule) body += "&schedule=" + encodeURIComponent(schedule);
      fetch("run", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-ordlab-token": token }, body: body })
        .then(function (res) {
          if (!res.ok) return res.text().then(function (t) { state.textContent = t.trim(); });
          var reader = res.body.getReader(), decoder = new TextDecoder(), buffer = "";
          var pump = function () {
            return reader.read().then(function (r) {
              if (r.done) return;
              buffer += decoder.decode(r.value, { stream: true });
              var i;
              while ((i = buffer.indexOf("\n\n")) >= 0) {
                handle(buffer.slice(0, i));
                buffer = buffer.slice(i + 2);
              }
              return pump();
            });
          };
          return pump();
        })
        .catch(function (e) { state.textContent = String(e); })
        .then(done);
    });
  };
  document.querySelectorAll("section.lab article.variant[data-variant]").forEach(function (art) {
    var lab = art.closest("section.lab").getAttribute("data-lab");
    var place = function (box) {
      var setup = art.querySelector("p.setup");
      if (setup) setup.after(box); else art.appendChild(box);
    };
    runBox(place, lab, art.getAttribute("data-variant"), null,
      ["▶ run again on this machine", "▶ chạy lại trên máy này"]);
  });
  // Each explored class: replay its schedule, exactly, on this machine's servers.
  document.querySelectorAll("section.explored article.exploration[data-lab]").forEach(function (art) {
    var lab = art.getAttribute("data-lab"), variant = art.getAttribute("data-variant");
    art.querySelectorAll("details.class").forEach(function (d) {
      var schedule = d.querySelector("summary").getAttribute("title");
      var place = function (box) { d.querySelector("div.steps").appendChild(box); };
      runBox(place, lab, variant, schedule, ["▶ replay this schedule on this machine", "▶ chạy lại lịch này trên máy này"]);
    });
  });
})();
