// The /bayescompare/ page: fills the dropdowns, starts comparisons through the JSON API and follows them.
// Every string from the server is put into the page with textContent (never innerHTML).
"use strict";

(function () {
  const body = document.body;
  const BASE = body.dataset.base;
  const CSRF = body.dataset.csrf;
  const $ = (id) => document.getElementById(id);
  const STAGES = Array.from(document.querySelectorAll("#stages li")).map((li) => li.dataset.stage);
  let polling = null;

  function api(path, options) {
    const opts = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    opts.headers = Object.assign({ Accept: "application/json" }, opts.headers);
    if (opts.body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-BayesCompare-CSRF"] = CSRF;
      opts.body = JSON.stringify(opts.body);
    }
    return fetch(BASE + path, opts).then((resp) =>
      resp.json().catch(() => ({ error: "HTTP " + resp.status })).then((data) => {
        if (!resp.ok) {
          const err = new Error(data.error || "HTTP " + resp.status);
          err.data = data;
          throw err;
        }
        return data;
      })
    );
  }

  function option(select, value, label) {
    const o = document.createElement("option");
    o.value = value;
    o.textContent = label === undefined ? value : label;
    select.appendChild(o);
  }

  function fill(select, values, preferred) {
    const keep = select.value;
    select.replaceChildren();
    values.forEach((v) => option(select, v));
    if (values.includes(keep)) select.value = keep;
    else if (preferred !== undefined && values[preferred] !== undefined) select.value = values[preferred];
  }

  function showFormError(message) {
    const el = $("form-error");
    el.textContent = message || "";
    el.hidden = !message;
  }

  // Each caller drops answers to its own earlier requests: an answer about an experiment, run or list the user has
  // since moved away from must not overwrite the newer one, whichever the server sends back first.
  function latestOnly() {
    let asked = 0;
    return () => {
      const mine = ++asked;
      return () => mine === asked;
    };
  }
  const choicesTurn = latestOnly();
  const followTurn = latestOnly();
  const historyTurn = latestOnly();

  function loadChoices() {
    const eid = $("experiment").value;
    if (!eid) return Promise.resolve();
    const q = new URLSearchParams({
      experiment_id: eid,
      model_tag: tagName("model_tag"),
      dataset_tag: tagName("dataset_tag"),
    });
    const current = choicesTurn();
    $("choices-info").textContent = "reading the experiment…";
    return api("/api/choices?" + q.toString())
      .then((c) => {
        if (!current()) return;
        fill($("metric"), c.metrics, 0);
        fill($("model_a"), c.models, 0);
        fill($("model_b"), c.models, 1);
        $("choices-info").textContent =
          c.models.length + " models · " + c.datasets.length + " datasets · " + c.runs + " runs";
        showFormError("");
      })
      .catch((e) => {
        if (!current()) return;
        $("choices-info").textContent = "";
        showFormError(e.message);
      });
  }

  // A number as typed (the server says what is wrong with it: never rounded or fixed here), or undefined if empty.
  function numberField(id) {
    const raw = $(id).value.trim();
    if (raw === "") return undefined;
    const n = Number(raw);
    return Number.isFinite(n) ? n : raw;
  }

  function tagName(id) {
    return $(id).value || $(id).dataset.default;
  }

  function commonFields() {
    const fields = {
      experiment_id: [$("experiment").value],
      metric: $("metric").value,
      rope: numberField("rope"),
      lower_is_better: $("direction").value === "lower",
      seed: numberField("seed"),
      chains: numberField("chains"),
      draws: numberField("draws"),
      threshold: numberField("threshold"),
      prior: $("prior").value,
      layout: $("layout").value,
      model_tag: tagName("model_tag"),
      dataset_tag: tagName("dataset_tag"),
      filter: $("filter").value,
      target_experiment: $("target_experiment").value || undefined,
    };
    Object.keys(fields).forEach((k) => fields[k] === undefined && delete fields[k]);
    return fields;
  }

  function start(path, fields, title) {
    showFormError("");
    $("compare-btn").disabled = $("matrix-btn").disabled = true;
    return api(path, { method: "POST", body: fields })
      .then((job) => {
        history.replaceState(null, "", BASE + "/?run_id=" + encodeURIComponent(job.run_id));
        follow(job.run_id, title);
        refreshHistory();
      })
      .catch((e) => showFormError(e.message))
      .finally(() => {
        $("compare-btn").disabled = $("matrix-btn").disabled = false;
      });
  }

  function fmt(p) {
    return typeof p === "number" ? p.toFixed(3) : "";
  }

  function showStages(stage, status) {
    const idx = STAGES.indexOf(stage);
    document.querySelectorAll("#stages li").forEach((li) => {
      const i = STAGES.indexOf(li.dataset.stage);
      li.className = "";
      if (status === "FAILED" && li.dataset.stage === stage) li.className = "failed";
      else if (i < idx || status === "FINISHED") li.className = "past";
      else if (i === idx) li.className = "current";
    });
  }

  function render(job) {
    $("job").hidden = false;
    const title =
      job.models
        ? "All models (" + (job.models || []).length + ") · " + (job.metric || "")
        : (job.model_a || "A") + " vs " + (job.model_b || "B") + " · " + (job.metric || "");
    $("job-title").textContent = title;
    showStages(job.stage, job.status);
    $("job-status").textContent =
      job.status === "RUNNING" ? "Running: " + (job.stage || "queued") + "…" : job.status;
    $("job-status").dataset.status = job.status;
    const err = $("job-error");
    err.hidden = !job.error;
    err.textContent = job.error ? "Failed: " + job.error : "";
    $("run-link").href = job.run_url;
    const done = job.status === "FINISHED";
    $("result").hidden = !(done || job.status === "FAILED");
    $("verdict").textContent = job.verdict || "";
    const pair = job.kind === "comparison";
    ["bar", "probs"].forEach((id) => ($(id).hidden = !(done && pair)));
    if (done && pair) {
      $("label-a").textContent = "P(" + job.model_a + " better)";
      $("label-b").textContent = "P(" + job.model_b + " better)";
      $("p-a").textContent = fmt(job.p_a_better);
      $("p-rope").textContent = fmt(job.p_rope);
      $("p-b").textContent = fmt(job.p_b_better);
      $("bar-a").style.width = 100 * (job.p_a_better || 0) + "%";
      $("bar-rope").style.width = 100 * (job.p_rope || 0) + "%";
      $("bar-b").style.width = 100 * (job.p_b_better || 0) + "%";
    }
    const report = $("report");
    if (done && job.report_url) {
      if (report.dataset.src !== job.report_url) {
        report.dataset.src = job.report_url;
        report.src = job.report_url;
      }
      report.hidden = false;
    } else {
      report.hidden = true;
    }
    const ranking = $("ranking");
    ranking.hidden = !(done && job.pairs);
    if (done && job.pairs) {
      const tbody = ranking.tBodies[0];
      tbody.replaceChildren();
      job.pairs.forEach((p) => {
        const tr = tbody.insertRow();
        [p.model_a + " vs " + p.model_b, p.verdict, fmt(p.p_a_better), fmt(p.p_rope), fmt(p.p_b_better)].forEach(
          (text) => (tr.insertCell().textContent = text || "")
        );
      });
    }
  }

  function follow(runId, title) {
    if (polling) clearTimeout(polling);
    $("job").hidden = false;
    if (title) $("job-title").textContent = title;
    const current = followTurn();
    const tick = () =>
      api("/api/comparisons/get?run_id=" + encodeURIComponent(runId))
        .then((job) => {
          if (!current()) return;
          render(job);
          if (job.status === "RUNNING") polling = setTimeout(tick, 1500);
          else refreshHistory();
        })
        .catch((e) => {
          if (!current()) return;
          $("job-error").hidden = false;
          $("job-error").textContent = e.message;
        });
    tick();
  }

  function historyRow(c) {
    const tr = document.createElement("tr");
    tr.dataset.runId = c.run_id;
    const cells = [];
    for (let i = 0; i < 9; i++) cells.push(tr.insertCell());
    cells[0].className = "time";
    cells[0].dataset.ms = c.start_time || "";
    const show = document.createElement("a");
    show.className = "show";
    show.href = BASE + "/?run_id=" + encodeURIComponent(c.run_id);
    show.textContent = c.models ? c.models.length + " models" : c.model_a + " vs " + c.model_b;
    cells[1].appendChild(show);
    cells[2].textContent = c.metric || "";
    cells[3].className = "status " + String(c.status).toLowerCase();
    cells[3].textContent = c.status + (c.status === "RUNNING" && c.stage ? " · " + c.stage : "");
    cells[4].textContent = c.verdict || c.error || "";
    [c.p_a_better, c.p_rope, c.p_b_better].forEach((p, i) => {
      cells[5 + i].className = "num";
      cells[5 + i].textContent = fmt(p);
    });
    const link = document.createElement("a");
    link.href = c.run_url;
    link.textContent = "MLflow run";
    cells[8].appendChild(link);
    return tr;
  }

  function formatTimes() {
    document.querySelectorAll("#past td.time").forEach((td) => {
      const ms = Number(td.dataset.ms);
      td.textContent = ms ? new Date(ms).toLocaleString() : "";
    });
  }

  function refreshHistory() {
    const current = historyTurn();
    return api("/api/comparisons?max_results=20")
      .then((data) => {
        if (!current()) return;
        const tbody = $("past").tBodies[0];
        tbody.replaceChildren();
        data.comparisons.forEach((c) => tbody.appendChild(historyRow(c)));
        if (!data.comparisons.length) {
          const tr = tbody.insertRow();
          const td = tr.insertCell();
          td.colSpan = 9;
          td.textContent = "No comparison yet.";
        }
        formatTimes();
      })
      .catch(() => {});
  }

  $("past").addEventListener("click", (ev) => {
    const a = ev.target.closest("a.show");
    if (!a) return;
    ev.preventDefault();
    const runId = a.closest("tr").dataset.runId;
    history.replaceState(null, "", a.href);
    follow(runId);
    $("job").scrollIntoView({ behavior: "smooth" });
  });

  $("experiment").addEventListener("change", loadChoices);
  $("model_tag").addEventListener("change", loadChoices);
  $("dataset_tag").addEventListener("change", loadChoices);

  $("compare-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const fields = Object.assign(commonFields(), { model_a: $("model_a").value, model_b: $("model_b").value });
    start("/api/comparisons", fields, fields.model_a + " vs " + fields.model_b);
  });

  // every model found in the experiment (the server finds them, as it checks the request)
  $("matrix-btn").addEventListener("click", () => start("/api/matrix", commonFields(), "All models"));

  formatTimes();
  loadChoices();
  if (body.dataset.runId) follow(body.dataset.runId);
})();
