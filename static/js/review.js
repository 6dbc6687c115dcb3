// Guidelines and flags on the audit page (progressive enhancement: both work without it).
// G opens the batch's guidelines, Esc closes them; F opens the flag box. While the
// guidelines or the flag box have the keyboard, the audit's own shortcuts stay quiet, and
// Enter in the flag box sends the flag, never the answer.
(function () {
  "use strict";
  function dialog() { return document.querySelector("dialog[data-guidelines]"); }
  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" || (el.tagName === "INPUT" && el.type !== "radio" && el.type !== "checkbox"));
  }
  function openGuidelines() {
    var d = dialog();
    if (!d) return false;
    if (d.open) d.close();
    d.showModal();
    return true;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var d = dialog();
    if (d && d.hasAttribute("data-first-time")) { d.close(); d.showModal(); }
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("[data-open-guidelines]");
    if (link && openGuidelines()) event.preventDefault();
  });
  // Capture phase, on window: runs before audit.js's document listener and can silence it.
  window.addEventListener("keydown", function (event) {
    var d = dialog();
    var inFlag = event.target && event.target.closest && event.target.closest("#flag-box");
    if ((d && d.open) || inFlag) {
      if (event.key !== "Escape") event.stopPropagation();
      if (inFlag && event.key === "Enter" && event.target.tagName !== "TEXTAREA") {
        var flagForm = inFlag.querySelector("form");
        if (flagForm) { event.preventDefault(); flagForm.requestSubmit(); }
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if ((event.key === "g" || event.key === "G") && openGuidelines()) {
      event.preventDefault();
      event.stopPropagation();
    } else if (event.key === "f" || event.key === "F") {
      var box = document.getElementById("flag-box");
      if (!box) return;
      box.open = true;
      var first = box.querySelector("input[type=radio]");
      if (first) first.focus();
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
})();
