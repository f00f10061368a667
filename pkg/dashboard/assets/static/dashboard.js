// The anet dashboard's only script (CSP: script-src 'self'). It fills the runs page from
// the server's event stream. Every value is set with textContent: text from peers and
// agents is never parsed as HTML (U1), and the server has already made its control and
// bidi characters visible.
"use strict";

(function () {
  const table = document.getElementById("runs");
  if (!table) {
    return;
  }
  const body = table.tBodies[0];
  const state = document.getElementById("runs-state");
  const empty = document.getElementById("runs-empty");
  let runs = [];

  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) {
      td.className = cls;
    }
    row.appendChild(td);
  }

  function elapsed(started) {
    const s = Math.max(0, Math.floor((Date.now() - Date.parse(started)) / 1000));
    const m = Math.floor(s / 60);
    return m > 0 ? m + " min " + (s % 60) + " s" : s + " s";
  }

  function draw() {
    body.replaceChildren();
    for (const r of runs) {
      const row = document.createElement("tr");
      row.dataset.run = r.run;
      cell(row, r.run, "mono");
      cell(row, r.peer, "mono");
      cell(row, r.interaction, "mono");
      cell(row, r.route);
      cell(row, new Date(r.started).toLocaleString());
      cell(row, elapsed(r.started));
      body.appendChild(row);
    }
    empty.hidden = runs.length > 0;
  }

  const events = new EventSource("/events/runs");
  events.addEventListener("runs", function (e) {
    const ev = JSON.parse(e.data);
    runs = Array.isArray(ev.runs) ? ev.runs : [];
    state.textContent = ev.error ? "anetd did not answer: " + ev.error : "Live: updated " + new Date().toLocaleTimeString();
    draw();
  });
  events.addEventListener("error", function () {
    state.textContent = "Disconnected; reconnecting…";
  });
  setInterval(draw, 1000);
})();
