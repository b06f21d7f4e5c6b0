// ordlab serve: a run box per variant ("run again", N times, cancel) and a "replay" box per
// explored class. A click asks the server to run the variant on this machine's servers (POST
// run), or to replay the class's schedule exactly; the answer is a stream of Server-Sent
// Events: that it started, each timeline line as the run records it, the run drawn so far
// (beside the saved picture), each run's verdict with the tally, then the outcome. A page
// loaded while a run goes on (a reload) finds it (GET run/current): its lines and picture so
// far, then the rest live. Each line and the verdict note when they arrived (data-arrived,
// ms since the page loaded). Each request that changes anything carries the token the server
// wrote into this page (meta ordlab-token): the server answers no other. Every message is in
// both languages; the page shows its own.
(function (book) {
  "use strict";
  var tokenMeta = document.querySelector("meta[name=ordlab-token]");
  var token = tokenMeta ? tokenMeta.getAttribute("content") : "";
  var boxes = [];
  var busy = false;
  var both = function (el, en, vi) {
    el.textContent = "";
    [["en", en], ["vi", vi]].forEach(function (p) {
      var s = document.createElement("span");
      s.setAttribute("lang", p[0]);
      s.textContent = p[1];
      el.appendChild(s);
    });
    return el;
  };
  var make = function (tag, cls, parent) {
    var el = document.createElement(tag);
    if (cls) el.className = cls;
    if (parent) parent.appendChild(el);
    return el;
  };
  var setBusy = function (on) {
    busy = on;
    boxes.forEach(function (b) { b.idle(!on); });
  };

  // Read a stream of Server-Sent Events, one handler call per event.
  var read = function (res, handle) {
    var reader = res.body.getReader(), decoder = new TextDecoder(), buffer = "";
    var pump = function () {
      return reader.read().then(function (r) {
        if (r.done) return;
        buffer += decoder.decode(r.value, { stream: true });
        var i;
        while ((i = buffer.indexOf("\n\n")) >= 0) {
          var kind = "message", data = "";
          buffer.slice(0, i).split("\n").forEach(function (l) {
            if (l.indexOf("event: ") === 0) kind = l.slice(7);
            if (l.indexOf("data: ") === 0) data += l.slice(6);
          });
          buffer = buffer.slice(i + 2);
          if (data) handle(kind, JSON.parse(data));
        }
        return pump();
      });
    };
    return pump();
  };

  // A run box: its buttons, state, elapsed time, tally, live picture, lines and verdict.
  var runBox = function (place, lab, variant, schedule, label) {
    var box = make("div", "live");
    box.setAttribute("data-lab", lab);
    box.setAttribute("data-variant", variant);
    if (schedule) box.setAttribute("data-schedule", schedule);
    var controls = make("div", "live-controls", box);
    var button = both(make("button", "run", controls), label[0], label[1]);
    button.type = "button";
    var times = null;
    if (!schedule) {
      var l = make("label", "times", controls);
      both(make("span", "", l), "times", "số lần");
      times = make("select", "", l);
      [1, 2, 5, 10, 20, 50].forEach(function (n) {
        var o = make("option", "", times);
        o.value = String(n);
        o.textContent = "× " + n;
      });
    }
    var cancel = both(make("button", "cancel", controls), "■ cancel", "■ hủy");
    cancel.type = "button";
    cancel.hidden = true;
    var elapsed = make("span", "elapsed", controls);
    elapsed.setAttribute("translate", "no");
    var state = make("span", "state", controls);
    state.setAttribute("aria-live", "polite");
    var tally = make("div", "tally", box);
    tally.setAttribute("aria-live", "polite");
    var runsList = make("ol", "live-runs", box);
    var fig = make("div", "live-fig", box);
    fig.setAttribute("role", "img");
    var list = make("ol", "live-events", box);
    var verdict = make("div", "live-verdict", box);
    verdict.hidden = true;
    place(box);
    var clock = null, since = 0;
    var me = {
      lab: lab, variant: variant, schedule: schedule, box: box,
      idle: function (yes) { button.disabled = !yes; if (times) times.disabled = !yes; }
    };
    boxes.push(me);
    var tick = function () {
      var s = Math.max(0, Math.floor((Date.now() - since) / 1000));
      elapsed.textContent = Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
    };
    var reset = function () {
      list.textContent = ""; runsList.textContent = ""; tally.textContent = ""; fig.textContent = "";
      verdict.hidden = true; verdict.removeAttribute("data-arrived");
      box.removeAttribute("data-ended");
    };
    var line = function (m) {
      var li = make("li", "", list);
      li.setAttribute("data-seq", String(m.seq));
      li.setAttribute("data-run", String(m.run));
      li.setAttribute("data-arrived", String(performance.now()));
      var t = make("span", "t", li);
      t.setAttribute("translate", "no");
      t.textContent = (m.run > 1 ? "#" + m.run + " " : "") + "+" + m.t_ms + " ms";
      both(make("span", "", li), m.en, m.vi);
      list.scrollTop = list.scrollHeight;
    };
    var picture = function (m) {
      fig.textContent = "";
      fig.setAttribute("data-run", String(m.run));
      fig.setAttribute("data-done", String(m.done));
      [["en", m.en], ["vi", m.vi]].forEach(function (p) {
        var d = make("div", "fig", fig);
        d.setAttribute("lang", p[0]);
        d.innerHTML = p[1];
      });
      fig.setAttribute("aria-label", (m.done ? "run " : "live run ") + m.run + " of " + lab + " " + variant);
    };
    var runDone = function (m) {
      var li = make("li", m.verdict, runsList);
      li.textContent = "#" + m.run + " " + (m.verdict === "wrong" ? "✕" : m.verdict === "right" ? "✓" : "?");
      li.setAttribute("data-verdict", m.verdict);
      li.setAttribute("title", m.en);
      both(tally, m.en, m.vi);
      tally.setAttribute("data-wrong", String(m.wrong));
      tally.setAttribute("data-judged", String(m.judged));
    };
    var end = function (kind, m) {
      if (clock) { clearInterval(clock); clock = null; tick(); }
      cancel.hidden = true;
      box.setAttribute("data-ended", kind);
      verdict.setAttribute("data-arrived", String(performance.now()));
      verdict.className = "live-verdict " + (kind === "failed" ? "failed" : kind === "cancelled" ? "cancelled" : m.matched ? "matched" : "mismatch");
      verdict.textContent = "";
      var en = kind === "failed" ? m.line : m.en, vi = kind === "failed" ? m.line : m.vi;
      [["en", en], ["vi", vi]].forEach(function (p) {
        var pre = make("pre", "", verdict);
        pre.setAttribute("lang", p[0]);
        pre.textContent = p[1];
      });
      verdict.hidden = false;
      if (kind === "failed") both(state, "the run failed", "lần chạy thất bại");
      else if (kind === "cancelled") both(state, "cancelled", "đã hủy");
      else both(state, "done: " + list.children.length + " lines", "xong: " + list.children.length + " dòng");
    };
    // Follow a run's stream (one this box started, or one found going on).
    me.follow = function (res) {
      setBusy(true);
      reset();
      // The saved picture and the live one, both on one screen from now on.
      var art = box.closest("article.variant");
      if (art) art.classList.add("live-on");
      cancel.hidden = false;
      box.setAttribute("data-running", "1");
      both(state, "running on this machine's servers…", "đang chạy trên các server của máy này…");
      return read(res, function (kind, m) {
        if (kind === "started") {
          since = m.started_ms;
          tick();
          if (!clock) clock = setInterval(tick, 500);
          box.setAttribute("data-runs", String(m.runs));
        } else if (kind === "line") line(m);
        else if (kind === "picture") picture(m);
        else if (kind === "run_done") runDone(m);
        else if (kind === "verdict" || kind === "failed" || kind === "cancelled") end(kind, m);
      }).catch(function (e) { state.textContent = String(e); }).then(function () {
        box.removeAttribute("data-running");
        if (clock) { clearInterval(clock); clock = null; }
        cancel.hidden = true;
        setBusy(false);
      });
    };
    button.addEventListener("click", function () {
      if (busy) return;
      setBusy(true);
      var body = "lab=" + encodeURIComponent(lab) + "&variant=" + encodeURIComponent(variant);
      if (schedule) body += "&schedule=" + encodeURIComponent(schedule);
      if (times) body += "&runs=" + encodeURIComponent(times.value);
      fetch("run", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "accept": "text/event-stream, application/json", "x-ordlab-token": token }, body: body })
        .then(function (res) {
          if (res.ok) return me.follow(res);
          setBusy(false);
          return res.text().then(function (t) {
            var said;
            try { said = JSON.parse(t); } catch (e) { said = { en: t.trim(), vi: t.trim() }; }
            both(state, said.en, said.vi);
            state.setAttribute("data-status", String(res.status));
          });
        })
        .catch(function (e) { setBusy(false); state.textContent = String(e); });
    });
    cancel.addEventListener("click", function () {
      both(state, "cancelling…", "đang hủy…");
      fetch("cancel", { method: "POST", headers: { "x-ordlab-token": token } });
    });
    return me;
  };

  // A run box under each variant's saved figure, the live picture beside it.
  document.querySelectorAll("section.lab article.variant[data-variant]").forEach(function (art) {
    var lab = art.closest("section.lab").getAttribute("data-lab");
    var place = function (box) {
      var after = art.querySelector("figure.timeline") || art.querySelector("p.setup");
      if (after) after.after(box); else art.appendChild(box);
    };
    runBox(place, lab, art.getAttribute("data-variant"), null,
      ["▶ run again on this machine", "▶ chạy lại trên máy này"]);
  });
  // Each explored class, once its exploration's classes are loaded: replay its schedule.
  var replayBoxes = function () {
    document.querySelectorAll("section.explored article.exploration[data-lab] details.class:not([data-box])").forEach(function (d) {
      var art = d.closest("article.exploration");
      d.setAttribute("data-box", "1");
      var schedule = d.querySelector("summary").getAttribute("title");
      var place = function (box) { d.querySelector("div.steps").appendChild(box); };
      var me = runBox(place, art.getAttribute("data-lab"), art.getAttribute("data-variant"), schedule,
        ["▶ replay this schedule on this machine", "▶ chạy lại lịch này trên máy này"]);
      me.idle(!busy);
    });
  };
  book.on("part", replayBoxes);
  replayBoxes();

  // A run going on when the page loads (a reload in the middle of it): follow it.
  fetch("run/current", { headers: { accept: "text/event-stream" } }).then(function (res) {
    if (res.status !== 200) return;
    // Its first message names it: the box is found then.
    var reader = res.body.getReader(), decoder = new TextDecoder(), first = "";
    var findBox = function () {
      return reader.read().then(function (r) {
        if (r.done) return;
        first += decoder.decode(r.value, { stream: true });
        var i = first.indexOf("\n\n");
        if (i < 0) return findBox();
        var data = first.slice(0, i).split("\n").filter(function (l) { return l.indexOf("data: ") === 0; })
          .map(function (l) { return l.slice(6); }).join("");
        var m = JSON.parse(data);
        var load = m.schedule ? book.need(document.querySelector('article.exploration[data-lab="' + m.lab + '"][data-variant="' + m.variant + '"] details.open-classes') || document.body) : Promise.resolve();
        return load.then(function () {
          replayBoxes();
          var b = boxes.filter(function (x) { return x.lab === m.lab && x.variant === m.variant && (x.schedule || null) === (m.schedule || null); })[0];
          if (!b) return;
          // The rest of the stream, with what was read already in front of it.
          var rest = new ReadableStream({
            start: function (c) { c.enqueue(new TextEncoder().encode(first)); },
            pull: function (c) { return reader.read().then(function (r) { if (r.done) c.close(); else c.enqueue(r.value); }); }
          });
          var d = b.box.closest("details.class");
          if (d) { d.open = true; d.closest("details.open-classes").open = true; }
          b.box.scrollIntoView({ block: "center" });
          return b.follow(new Response(rest));
        });
      });
    };
    return findBox();
  }).catch(function () { /* no run going on */ });
})(ordlabBook);
