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
  // Draws each bar's `ci` ([low, high]) of a dataset as a whisker over the bar.
  const ciWhiskers = {
    id: "ciWhiskers",
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx, y = chart.scales.y;
      chart.data.datasets.forEach((dataset, index) => {
        if (!dataset.ci || !chart.isDatasetVisible(index)) return;
        chart.getDatasetMeta(index).data.forEach((bar, i) => {
          const ci = dataset.ci[i];
          if (!ci || typeof ci[0] !== "number" || typeof ci[1] !== "number") return;
          const top = y.getPixelForValue(ci[1]), bottom = y.getPixelForValue(ci[0]), cap = Math.min(8, bar.width / 3);
          ctx.save();
          ctx.strokeStyle = getComputedStyle(document.documentElement).getPropertyValue("--fg") || "#1d232b";
          ctx.lineWidth = 1.5;
          ctx.beginPath();
          ctx.moveTo(bar.x, top); ctx.lineTo(bar.x, bottom);
          ctx.moveTo(bar.x - cap, top); ctx.lineTo(bar.x + cap, top);
          ctx.moveTo(bar.x - cap, bottom); ctx.lineTo(bar.x + cap, bottom);
          ctx.stroke();
          ctx.restore();
        });
      });
    },
  };
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
    if (a) {
      // The axis reaches below zero when an AC1 or its interval does (a negative AC1 is the
      // batch that needs attention); the 95 % CI is a thin floating bar over each AC1 bar,
      // the flag threshold a dashed line.
      const canvas = document.getElementById("chart-ac1");
      const threshold = canvas ? parseFloat(canvas.dataset.threshold) : NaN;
      const values = a.flatMap(r => [r.ac1, r.ac1_ci_low, r.kappa, r.alpha]).filter(v => typeof v === "number");
      const low = Math.max(-1, Math.min(0, Math.floor(Math.min(...values, 0) * 10) / 10));
      const datasets = [
        { label: "AC1 (whiskers: 95 % CI)", data: a.map(r => r.ac1), backgroundColor: a.map(r => r.flagged ? "#8f5500" : "#2454d6"),
          ci: a.map(r => r.too_few ? null : [r.ac1_ci_low, r.ac1_ci_high]) },
        { label: "Kappa", data: a.map(r => r.kappa), backgroundColor: "#94a3b8" },
        { label: "Alpha", data: a.map(r => r.alpha), backgroundColor: "#cbd5e1" },
      ];
      if (!Number.isNaN(threshold)) datasets.push({
        label: "Threshold " + threshold, type: "line", data: a.map(() => threshold), borderColor: "#a33327",
        borderDash: [6, 4], borderWidth: 2, pointRadius: 0, fill: false });
      // an AC1 from too few items gets no whisker (a width-0 interval would look certain), and says so
      draw("chart-ac1", { type: "bar", data: { labels: a.map(r => r.too_few ? r.batch + " (n too small)" : r.batch), datasets: datasets },
        options: { scales: { y: { min: low, max: 1 } } }, plugins: [ciWhiskers] });
    }
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
