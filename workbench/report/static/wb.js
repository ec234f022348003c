// Renders every chart of a page from the spec inlined next to it, with the shared Vega runtime (no network).
(function () {
  "use strict";
  function renderAll() {
    var specs = document.querySelectorAll("script.chart-spec");
    specs.forEach(function (el) {
      var target = document.getElementById(el.getAttribute("data-target"));
      if (!target) { return; }
      var spec;
      try {
        spec = JSON.parse(el.textContent);
      } catch (err) {
        target.textContent = "chart spec unreadable: " + err;
        target.classList.add("chart-error");
        console.error(err);
        return;
      }
      if (typeof window.vegaEmbed !== "function") {
        target.textContent = "chart runtime missing (assets/vega-bundle.js)";
        target.classList.add("chart-error");
        console.error("vegaEmbed is not loaded");
        return;
      }
      window.vegaEmbed(target, spec, { renderer: "svg", actions: false })
        .then(function () { target.setAttribute("data-rendered", "true"); })
        .catch(function (err) {
          target.textContent = "chart failed: " + err;
          target.classList.add("chart-error");
          console.error(err);
        });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", renderAll);
  } else {
    renderAll();
  }
})();
