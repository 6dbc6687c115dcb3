(function () {
  "use strict";
  var form = document.querySelector("[data-display-settings]");
  var root = document.documentElement;
  var status = form.querySelector("[data-display-status]");
  function stored(key, fallback) { try { return localStorage.getItem(key) || fallback; } catch (e) { return fallback; } }
  form.querySelector('[name=theme][value="' + stored("dialtom:theme", "auto") + '"]').checked = true;
  form.querySelector('[name=text][value="' + stored("dialtom:text", "normal") + '"]').checked = true;
  form.addEventListener("change", function (event) {
    var name = event.target.name, value = event.target.value;
    try { localStorage.setItem("dialtom:" + name, value); } catch (e) {}
    if (name === "theme") {
      root.dataset.theme = value === "auto" ? (window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light") : value;
    } else if (value === "normal") {
      delete root.dataset.text;
    } else {
      root.dataset.text = value;
    }
    status.textContent = "Saved.";
  });
})();
