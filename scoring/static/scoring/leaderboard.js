(function () {
  const data = JSON.parse(document.getElementById("runs-data").textContent);
  new Chart(document.getElementById("rates"), {
    type: "bar",
    data: {labels: data.labels, datasets: [
      {label: "Correctness Rate (%)", data: data.rates, backgroundColor: "#2454d6"},
      {label: "Random baseline (%)", data: data.baselines, backgroundColor: "#cbd5e1"}]},
    options: {animation: false, scales: {y: {min: 0, max: 100}}}
  });
})();
