// Charts of the dashboard, drawn with Chart.js from the numbers the page already has
// (json_script blocks); redrawn whenever htmx swaps a section in.
(function () {
  const charts = {};
  function data(id) {
    const el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }
  function draw(canvasId, config) {
    const canvas = document.getElementById(canvasId);
    if (!canvas || typeof Chart === "undefined") return;
    if (charts[canvasId]) charts[canvasId].destroy();
    config.options = Object.assign({ responsive: true, maintainAspectRatio: false, animation: false }, config.options || {});
    charts[canvasId] = new Chart(canvas, config);
  }
  function render() {
    const t = data("data-throughput");
    if (t) draw("chart-progress", {
      type: "line",
      data: { labels: t.map(r => r.day), datasets: [
        { label: "Judgments (cumulative)", data: t.map(r => r.cumulative), borderColor: "#2454d6", yAxisID: "y" },
        { label: "Judgments per day", data: t.map(r => r.judgments), type: "bar", backgroundColor: "#cbd5e1", yAxisID: "y1" } ] },
      options: { scales: { y: { beginAtZero: true, position: "left" }, y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false } } } },
    });
    const a = data("data-agreement");
    if (a) draw("chart-ac1", {
      type: "bar",
      data: { labels: a.map(r => r.batch), datasets: [
        { label: "AC1", data: a.map(r => r.ac1), backgroundColor: a.map(r => r.flagged ? "#b26a00" : "#2454d6") },
        { label: "Kappa", data: a.map(r => r.kappa), backgroundColor: "#94a3b8" },
        { label: "Alpha", data: a.map(r => r.alpha), backgroundColor: "#cbd5e1" } ] },
      options: { scales: { y: { min: 0, max: 1 } } },
    });
    const r = data("data-retention");
    if (r) draw("chart-retention", {
      type: "bar",
      data: { labels: r.map(x => x.group), datasets: [
        { label: "Retrospective", data: r.map(x => x.retrospective.rate), backgroundColor: "#1f8a4c" },
        { label: "Prospective", data: r.map(x => x.prospective.rate), backgroundColor: "#7cc49a" } ] },
      options: { scales: { y: { min: 0, max: 1 } } },
    });
  }
  document.addEventListener("DOMContentLoaded", render);
  document.addEventListener("htmx:afterSettle", render);
})();
