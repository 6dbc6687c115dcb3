// Keyboard shortcuts for the audit form (progressive enhancement: the form works without them).
// 1–4 pick the option shown at that position, 5 "none of the above" (prospective items),
// N none is correct, M more than one is correct, Enter submits, S opens the skip reasons
// (Enter then skips), Backspace undoes the answer just given (opens it to change it) for a
// few seconds after it was saved, D shows or folds the dialogue again (2nd and later questions
// about one dialogue). `?` lists them all (studio.js).
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
  // A new item arrived: start it at the top of the page.
  document.addEventListener("htmx:afterSwap", function () { window.scrollTo(0, 0); armUndo(); });
})();
