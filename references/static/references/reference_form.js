(function () {
  // Time spent: what the draft already had plus the time this page is open; the draft keeps it.
  var form = document.getElementById("reference-form");
  var field = form.querySelector("[name=seconds_spent]");
  var base = parseFloat(field.value) || 0, start = Date.now(), submitting = false;
  var shown = document.getElementById("time-spent");
  function tick() {
    var seconds = base + (Date.now() - start) / 1000;
    field.value = seconds.toFixed(1);
    shown.textContent = Math.floor(seconds / 60) + " min " + String(Math.floor(seconds % 60)).padStart(2, "0") + " s";
  }
  tick();
  setInterval(tick, 1000);
  // Every edit is also kept in this browser (localStorage) with a stamp: the time it was
  // made, and never less than the stored draft's stamp + 1, so another device's clock does
  // not matter. The stamp goes with each save (client_ts): the server drops a save older
  // than the draft it holds, so a late beacon never overwrites newer text. A page that
  // opens with an older draft than the one kept here, last saved by this same browser (an
  // autosave that never reached the server, a beacon still on its way), restores the kept
  // text and saves it.
  var key = "dialtom:reference-draft:" + form.dataset.assignment;
  var stamp = form.querySelector("[name=client_ts]");
  var client = form.querySelector("[name=client_id]");
  var fields = Array.prototype.slice.call(form.querySelectorAll("textarea"));
  try {
    client.value = localStorage.getItem("dialtom:browser") || "";
    if (!client.value) {
      client.value = Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
      localStorage.setItem("dialtom:browser", client.value);
    }
  } catch (e) {}
  function keep() {
    var texts = {};
    fields.forEach(function (f) { texts[f.name] = f.value; });
    stamp.value = String(Math.max(Date.now(), (Number(stamp.value) || 0) + 1));
    try { localStorage.setItem(key, JSON.stringify({ts: Number(stamp.value), texts: texts})); } catch (e) {}
  }
  form.addEventListener("input", keep);
  // Offline, an edit is kept in this browser only: the status says so, never "saved", and
  // the text goes to the server as soon as the browser is back online.
  var LOCAL_ONLY = "Saved in this browser — not yet on the server. It is sent when you are back online.";
  function localOnly(why) {
    var status = document.getElementById("autosave-status");
    if (!status) return;
    status.textContent = "";
    var note = document.createElement("span");
    note.className = "error";
    note.setAttribute("data-local-only", "");
    note.textContent = (why ? why + " " : "") + LOCAL_ONLY;
    status.appendChild(note);
  }
  form.addEventListener("input", function () { if (navigator.onLine === false) localOnly("Offline."); });
  function fromAutosave(event) {
    var elt = event.detail && event.detail.elt;
    return elt && form.contains(elt) && elt.tagName === "TEXTAREA";
  }
  document.addEventListener("htmx:sendError", function (event) { if (fromAutosave(event)) localOnly("The server cannot be reached."); });
  document.addEventListener("htmx:responseError", function (event) {
    if (fromAutosave(event)) localOnly("The server could not save it (error " + event.detail.xhr.status + ").");
  });
  window.addEventListener("online", function () {
    if (document.querySelector("#autosave-status [data-local-only]") && fields.length) htmx.trigger(fields[0], "change");
  });
  function restore() {  // on load: htmx (deferred) has set up the fields by then
    try {
      var kept = JSON.parse(localStorage.getItem(key) || "null");
      var savedHere = !form.dataset.draftClient || form.dataset.draftClient === client.value;
      if (kept && !savedHere) localStorage.removeItem(key);  // another device saved since: its draft wins
      if (kept && savedHere && kept.ts > (Number(stamp.value) || 0) &&
          fields.some(function (f) { return typeof kept.texts[f.name] === "string" && kept.texts[f.name] !== f.value; })) {
        fields.forEach(function (f) { if (typeof kept.texts[f.name] === "string") f.value = kept.texts[f.name]; });
        stamp.value = String(kept.ts);
        document.getElementById("autosave-status").textContent = "Restored what you typed here last; saving it…";
        htmx.trigger(fields[0], "change");
      }
    } catch (e) {}
  }
  window.addEventListener("load", restore);
  // Ctrl+Enter (or Cmd+Enter) submits from anywhere, text boxes included.
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey)) return;
    event.preventDefault();
    var submit = form.querySelector("[data-submit]");
    if (typeof form.requestSubmit === "function") form.requestSubmit(submit); else submit.click();
  });
  form.addEventListener("submit", function () {
    tick(); submitting = true;
    try { localStorage.removeItem(key); } catch (e) {}
  });
  // A tab closed before the debounce fired still saves what was typed.
  window.addEventListener("pagehide", function () {
    if (submitting || !navigator.sendBeacon) return;
    tick();
    navigator.sendBeacon(form.dataset.autosave, new FormData(form));
  });
})();
