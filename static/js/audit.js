// Keyboard shortcuts for the audit form (progressive enhancement: the form works without them).
// 1–4 pick the option shown at that position, 5 "none of the above" (prospective items),
// N none is correct, M more than one is correct, Enter submits, S opens the skip reasons
// (Enter then skips), Backspace undoes the answer just given (opens it to change it) for a
// few seconds after it was saved, D shows or folds the dialogue again (2nd and later questions
// about one dialogue). `?` lists them all (studio.js). A submit that fails is said, kept and retried.
(function () {
  "use strict";
  function form() { return document.querySelector("form[data-audit-form]"); }
  function pick(f, value) {
    var input = f.querySelector('input[name="choice"][value="' + value + '"]');
    if (input) { input.checked = true; input.focus(); }
    return !!input;
  }
  function typing(target) {
    return window.dialtomTyping ? window.dialtomTyping(target)
      : !!target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"));
  }
  function click(element) {
    if (element && !element.disabled) { element.click(); return true; }
    return false;
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.open) return;
    var key = event.key;
    var handled = false;
    if (key === "Backspace") {
      var undo = document.querySelector("[data-undo-button]");
      // A key pressed in the instant after a swap, before htmx has set the new button up.
      if (undo && window.htmx) window.htmx.process(undo);
      handled = click(undo);
      if (handled) event.preventDefault();
      return;
    }
    var f = form();
    if (!f) return;
    var panel = f.querySelector("[data-skip-panel]");
    var letters = ["A", "B", "C", "D"];
    if (key >= "1" && key <= "4") handled = pick(f, letters[Number(key) - 1]);
    else if (key === "5") handled = pick(f, "NOTA");
    else if (key === "n" || key === "N") handled = pick(f, "NONE");
    else if (key === "m" || key === "M") handled = pick(f, "MULTIPLE");
    else if ((key === "d" || key === "D") && f.querySelector("[data-dialogue-again]")) {
      var again = f.querySelector("[data-dialogue-again]");
      again.open = !again.open;
      handled = true;
    } else if ((key === "s" || key === "S") && panel) {
      panel.open = true;
      var reason = panel.querySelector('input[name="skip_reason"]:checked') || panel.querySelector('input[name="skip_reason"]');
      if (reason) reason.focus();
      handled = true;
    } else if (key === "Escape" && panel && panel.open) {
      panel.open = false;
      handled = true;
    } else if (key === "Enter") {
      if (event.target && event.target.tagName === "SUMMARY") return;  // Enter on "Skip" opens it
      if (window.htmx) window.htmx.process(f);  // pressed in the instant after a swap: htmx's own submit, not the browser's
      handled = click(f.querySelector(panel && panel.open ? "[data-skip-confirm]" : "[data-submit]"));
    }
    if (handled) event.preventDefault();
  });
  // The answer just saved can be undone for a few seconds; then the offer goes away.
  function armUndo() {
    var offer = document.querySelector("[data-undo]");
    if (!offer) return;
    var seconds = Number(offer.dataset.undoSeconds) || 10;
    setTimeout(function () { if (offer.isConnected) offer.remove(); }, seconds * 1000);
  }
  // A submit that never reached the server (offline) or that it failed to handle (5xx): htmx
  // swaps nothing, so the answer stays as it was; say so in place and offer to send it again
  // (the same idempotency key: a retry of an answer that did arrive is not counted twice).
  // Coming back online retries by itself.
  var lastSubmitter = null;
  document.addEventListener("submit", function (event) {
    if (event.target.matches && event.target.matches("form[data-audit-form]")) lastSubmitter = event.submitter || null;
  }, true);
  function failed(event, offline) {
    var f = event.detail && event.detail.elt && event.detail.elt.closest && event.detail.elt.closest("form[data-audit-form]");
    var box = f && f.querySelector("[data-submit-failed]");
    if (!box) return;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    box.textContent = "";
    var text = document.createElement("span");
    text.textContent = offline || !status
      ? "Your answer was not sent: this browser is offline or the server cannot be reached. It is kept here."
      : "The server could not save your answer (error " + status + "). It is kept here.";
    var retry = document.createElement("button");
    retry.type = "button";
    retry.textContent = "Try again";
    retry.setAttribute("data-retry", "");
    retry.addEventListener("click", function () { resend(f); });
    box.appendChild(text);
    box.appendChild(retry);
    box.hidden = false;
    box.dataset.pending = "1";
  }
  function resend(f) {
    var box = f.querySelector("[data-submit-failed]");
    if (box) { box.hidden = true; delete box.dataset.pending; }
    var submitter = lastSubmitter && f.contains(lastSubmitter) ? lastSubmitter : f.querySelector("[data-submit]");
    f.requestSubmit(submitter || undefined);
  }
  document.addEventListener("htmx:sendError", function (event) { failed(event, true); });
  document.addEventListener("htmx:responseError", function (event) { failed(event, false); });
  window.addEventListener("online", function () {
    var box = document.querySelector("form[data-audit-form] [data-submit-failed][data-pending]");
    if (box) resend(box.closest("form"));
  });
  // A new item arrived: start it at the top of the page.
  document.addEventListener("htmx:afterSwap", function () { window.scrollTo(0, 0); armUndo(); });
})();
