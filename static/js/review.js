// Guidelines and flags on the audit page (progressive enhancement: both work without it).
// G opens the batch's guidelines (at their top), Esc or Enter closes them; F opens the flag box. While the
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
    show(d);
    return true;
  }
  // Opened at the top (the heading has the focus), never scrolled down to the close button.
  function show(d) {
    d.showModal();
    d.scrollTop = 0;
  }
  document.addEventListener("DOMContentLoaded", function () {
    var d = dialog();
    if (d && d.hasAttribute("data-first-time")) { d.close(); show(d); }
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
      if (d && d.open && event.key === "Enter" && (event.target === d || event.target.id === "guidelines-title")) {
        event.preventDefault();
        d.close();  // Enter starts, as the button at the bottom does
        return;
      }
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
