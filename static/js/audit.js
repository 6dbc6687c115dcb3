// Keyboard shortcuts for the audit form (progressive enhancement: the form works without them).
// 1–4 pick the option shown at that position, 5 "none of the above" (counterfactual items),
// N none is correct, M more than one is correct, Enter submits, S skips.
(function () {
  "use strict";
  function form() { return document.querySelector("form[data-audit-form]"); }
  function pick(f, value) {
    var input = f.querySelector('input[name="choice"][value="' + value + '"]');
    if (input) { input.checked = true; input.focus(); }
    return !!input;
  }
  document.addEventListener("keydown", function (event) {
    var f = form();
    if (!f || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"))) return;
    var key = event.key;
    var letters = ["A", "B", "C", "D"];
    var handled = false;
    if (key >= "1" && key <= "4") handled = pick(f, letters[Number(key) - 1]);
    else if (key === "5") handled = pick(f, "NOTA");
    else if (key === "n" || key === "N") handled = pick(f, "NONE");
    else if (key === "m" || key === "M") handled = pick(f, "MULTIPLE");
    else if (key === "s" || key === "S") {
      var skip = f.querySelector("[data-skip]");
      if (skip && !skip.disabled) { skip.click(); handled = true; }
    } else if (key === "Enter") {
      var submit = f.querySelector("[data-submit]");
      if (submit && !submit.disabled) { submit.click(); handled = true; }
    }
    if (handled) event.preventDefault();
  });
  // A new item arrived: start it at the top of the page.
  document.addEventListener("htmx:afterSwap", function () { window.scrollTo(0, 0); });
})();
