// Site-wide behaviour (progressive enhancement: every page works without it).
// - A table wider than its card scrolls inside its own box, not the whole page (phones).
// - `?` opens the list of keyboard shortcuts (base.html's <dialog>, plus the page's own).
(function () {
  "use strict";
  function label(table) {
    if (table.getAttribute("aria-label")) return table.getAttribute("aria-label");
    var caption = table.querySelector("caption");
    if (caption) return caption.textContent.trim();
    var node = table;
    while (node && node !== document.body) {
      var previous = node.previousElementSibling;
      while (previous) {
        if (/^H[1-6]$/.test(previous.tagName)) return previous.textContent.trim();
        var inner = previous.querySelector && previous.querySelector("h1, h2, h3, h4");
        if (inner) return inner.textContent.trim();
        previous = previous.previousElementSibling;
      }
      node = node.parentElement;
    }
    return "Table";
  }
  function wrapTables(root) {
    (root || document).querySelectorAll("main table").forEach(function (table) {
      if (table.parentElement.classList.contains("table-scroll")) return;
      var box = document.createElement("div");
      box.className = "table-scroll";
      // keyboard users can scroll it too (axe: scrollable-region-focusable)
      box.tabIndex = 0;
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", label(table));
      table.parentElement.insertBefore(box, table);
      box.appendChild(table);
    });
  }
  function typing(target) {
    if (!target) return false;
    var tag = target.tagName;
    return tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable ||
      (tag === "INPUT" && !["radio", "checkbox", "button", "submit"].includes(target.type));
  }
  function shortcutsDialog() { return document.getElementById("shortcuts"); }
  document.addEventListener("keydown", function (event) {
    if (event.key !== "?" || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    var dialog = shortcutsDialog();
    if (!dialog || typeof dialog.showModal !== "function") return;
    event.preventDefault();
    if (dialog.open) dialog.close(); else dialog.showModal();
  });
  document.addEventListener("click", function (event) {
    var opener = event.target.closest && event.target.closest("[data-shortcuts-open]");
    if (opener && shortcutsDialog()) { event.preventDefault(); shortcutsDialog().showModal(); }
  });
  window.dialtomTyping = typing;
  document.addEventListener("DOMContentLoaded", function () {
    wrapTables(document);
    // a dialogue in a scroll box opens at its end: the last turns are what is asked about
    document.querySelectorAll("[data-scroll-end]").forEach(function (box) { box.scrollTop = box.scrollHeight; });
  });
  document.addEventListener("htmx:load", function (event) { wrapTables(event.target.parentElement || document); });
})();
