// Display settings (dark mode, text size), applied before the page is drawn so it never
// flashes; chosen on the profile page and remembered in this browser (localStorage).
(function () {
  "use strict";
  try {
    var theme = localStorage.getItem("dialtom:theme") || "auto";
    if (theme === "auto") theme = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
    document.documentElement.dataset.theme = theme;
    var text = localStorage.getItem("dialtom:text");
    if (text && text !== "normal") document.documentElement.dataset.text = text;
  } catch (e) {}
})();
