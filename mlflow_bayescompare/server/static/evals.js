// The page's "Compare evaluation runs" part: lists an experiment's evaluation runs (GET …/api/evaluation-runs),
// starts a comparison of two (or a ranking of several) through POST …/api/evals, and hands the job to page.js to
// follow (the event "bayescompare:follow"); a reopened comparison of runs refills it ("bayescompare:refill").
// Every string from the server is put into the page with textContent (never innerHTML).
"use strict";

(function () {
  const body = document.body;
  const BASE = body.dataset.base;
  const CSRF = body.dataset.csrf;
  const FAMILIES = JSON.parse(body.dataset.families);
  const $ = (id) => document.getElementById(id);
  // the fields of the request read from a text input, by their name in the JSON API
  const TEXT_FIELDS = { scorers: "evals-scorers", rope: "evals-rope", cluster: "evals-cluster",
    pair_key: "evals-pair-key", dataset_key: "evals-dataset-key", direction: "evals-direction",
    target_experiment: "evals-target" };
  let asked = 0; // the latest list of runs asked for: an older answer is dropped
  let busy = false;

  function request(path, options) {
    const opts = Object.assign({ credentials: "same-origin", headers: { Accept: "application/json" } }, options);
    if (opts.body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-BayesCompare-CSRF"] = CSRF;
      opts.body = JSON.stringify(opts.body);
    }
    return fetch(BASE + path, opts).then((resp) =>
      resp.json().catch(() => ({ error: "HTTP " + resp.status })).then((data) => {
        if (!resp.ok) throw new Error(data.error || "HTTP " + resp.status);
        return data;
      })
    );
  }

  function showError(message) {
    $("evals-error").textContent = message || "";
    $("evals-error").hidden = !message;
  }

  function label(run) {
    return (run.name || run.run_id) + " · " + run.kind + " · " + run.run_id.slice(0, 8);
  }

  function fillRuns(runs) {
    ["evals-run-a", "evals-run-b", "evals-runs"].forEach((id) => {
      const select = $(id);
      select.replaceChildren();
      runs.forEach((run) => {
        const o = document.createElement("option");
        o.value = run.run_id;
        o.textContent = label(run);
        select.appendChild(o);
      });
    });
    if (runs.length >= 2) {
      $("evals-run-a").value = runs[1].run_id; // the older of the newest two is the baseline
      $("evals-run-b").value = runs[0].run_id;
    }
    $("evals-info").textContent = runs.length + " evaluation run" + (runs.length === 1 ? "" : "s");
    updateButtons();
  }

  function loadRuns() {
    const eid = $("evals-experiment").value;
    const mine = ++asked;
    if (!eid) return Promise.resolve(fillRuns([]));
    return request("/api/evaluation-runs?experiment_id=" + encodeURIComponent(eid))
      .then((data) => {
        if (mine === asked) fillRuns(data.runs);
      })
      .catch((e) => {
        if (mine !== asked) return;
        fillRuns([]);
        showError(e.message);
      });
  }

  function ranked() {
    return Array.from($("evals-runs").selectedOptions).map((o) => o.value);
  }

  function updateButtons() {
    const a = $("evals-run-a").value;
    const b = $("evals-run-b").value;
    $("evals-btn").disabled = busy || !a || !b || a === b;
    $("evals-rank-btn").disabled = busy || ranked().length < 2;
  }

  // The request's fields: the runs, and every setting given (an empty one is left to the server's default).
  function fields(runs) {
    const out = Object.assign({}, runs);
    Object.entries(TEXT_FIELDS).forEach(([name, id]) => {
      const value = $(id).value.trim();
      if (value) out[name] = value;
    });
    const threshold = $("evals-threshold").value;
    if (threshold !== "") out.threshold = Number(threshold);
    const seed = $("evals-seed").value;
    if (seed !== "") out.seed = Number(seed);
    return out;
  }

  function start(runs, title) {
    showError("");
    busy = true;
    updateButtons();
    return request("/api/evals", { method: "POST", body: fields(runs) })
      .then((job) => document.dispatchEvent(new CustomEvent("bayescompare:follow",
        { detail: { runId: job.run_id, title: title } })))
      .catch((e) => showError(e.message))
      .finally(() => {
        busy = false;
        updateButtons();
      });
  }

  function optionText(select) {
    return select.selectedOptions.length ? select.selectedOptions[0].textContent : "";
  }

  function chooseRuns(job) {
    const runs = job.source_runs || [];
    const choose = (select, value) => {
      if (Array.from(select.options).some((o) => o.value === value)) select.value = value;
    };
    if (job.kind === "ranking") {
      Array.from($("evals-runs").options).forEach((o) => (o.selected = runs.includes(o.value)));
    } else if (runs.length === 2) {
      choose($("evals-run-a"), runs[0]);
      choose($("evals-run-b"), runs[1]);
    }
    updateButtons();
  }

  // A reopened comparison of evaluation runs: its experiment and its runs chosen again (when the runs are listed).
  document.addEventListener("bayescompare:refill", (ev) => {
    const job = ev.detail;
    const experiments = (job.settings || {}).experiment_ids || [];
    const select = $("evals-experiment");
    const listed = experiments.length === 1 && Array.from(select.options).some((o) => o.value === experiments[0]);
    if (listed && select.value !== experiments[0]) {
      select.value = experiments[0];
      loadRuns().then(() => chooseRuns(job));
    } else chooseRuns(job);
    $("evals-section").scrollIntoView({ behavior: "smooth" });
  });

  const method = Object.values(FAMILIES.evaluations || {})[0];
  $("evals-method").textContent = method ? "Method: " + method.title + " (" + method.reference + ")." : "";
  $("evals-experiment").addEventListener("change", () => {
    showError("");
    loadRuns();
  });
  ["evals-run-a", "evals-run-b", "evals-runs"].forEach((id) => $(id).addEventListener("change", updateButtons));
  $("evals-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const title = optionText($("evals-run-a")).split(" · ")[0] + " vs " +
      optionText($("evals-run-b")).split(" · ")[0] + " · evaluation runs";
    start({ run_a: $("evals-run-a").value, run_b: $("evals-run-b").value }, title);
  });
  $("evals-rank-btn").addEventListener("click", () =>
    start({ runs: ranked() }, "Ranking of " + ranked().length + " evaluation runs"));
  loadRuns();
})();
