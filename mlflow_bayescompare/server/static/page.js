// The /bayescompare/ page: fills the dropdowns, starts comparisons through the JSON API and follows them, lists the
// past ones (a matrix's pairs under it) and refills the form from the one reopened.
// Every string from the server is put into the page with textContent (never innerHTML).
"use strict";

(function () {
  const body = document.body;
  const BASE = body.dataset.base;
  const CSRF = body.dataset.csrf;
  // Each test family's words on this page, by name, as the server's family table gives them: the page names none.
  const FAMILIES = JSON.parse(body.dataset.families);
  const testOf = (name) => FAMILIES.tests[name] || {};
  const rankingOf = (name) => FAMILIES.rankings[name] || {};
  const $ = (id) => document.getElementById(id);
  const STAGES = Array.from(document.querySelectorAll("#stages li")).map((li) => li.dataset.stage);
  let polling = null;
  let busy = false; // a request to start a job is on its way

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

  // The options `values`, keeping what was chosen among them (a multiple select: each of its choices), else the
  // one at `preferred`.
  function fill(select, values, preferred) {
    const kept = values.filter((v) => chosen(select).includes(v));
    select.replaceChildren();
    values.forEach((v) => option(select, v));
    if (kept.length) selectValues(select, kept);
    else if (preferred !== undefined && values[preferred] !== undefined) select.value = values[preferred];
  }

  function chosen(select) {
    return Array.from(select.selectedOptions).map((o) => o.value);
  }

  // Exactly the options of `values` chosen (one select: the first of them).
  function selectValues(select, values) {
    if (!select.multiple) select.value = values[0];
    else Array.from(select.options).forEach((o) => (o.selected = values.includes(o.value)));
  }

  // "Rank all models against": nothing (the ranking alone), the best, or one of the models.
  function fillAgainst(models) {
    const select = $("vs");
    const keep = select.value;
    Array.from(select.options).slice(2).forEach((o) => o.remove());
    models.forEach((m) => option(select, m));
    choose(select, keep);
  }

  function choose(select, value) {
    if (value !== undefined && value !== null && Array.from(select.options).some((o) => o.value === String(value)))
      select.value = String(value);
  }

  function showFormError(message) {
    const el = $("form-error");
    el.textContent = message || "";
    el.hidden = !message;
  }

  // ---------------------------------------------------------------------------------------------- the form

  // Compare needs a metric and two different models; "all models" a metric and two models at least.  The problem
  // is shown once the experiment's choices are in (none while they load).
  function formProblem() {
    const models = $("model_a").options.length;
    if (!$("metric").value) return models ? "The experiment has no metric to compare." : "";
    if (models < 2) return "The experiment needs runs of two models at least.";
    if ($("model_a").value === $("model_b").value) return "Choose two different models for A and B.";
    return "";
  }

  function updateButtons() {
    const problem = formProblem();
    const loaded = $("metric").value !== "";
    const severalMetrics = chosen($("metric")).length > 1;
    $("compare-btn").disabled = busy || !loaded || problem !== "";
    $("matrix-btn").disabled = busy || !loaded || $("model_a").options.length < 2 || severalMetrics;
    $("matrix-btn").title = severalMetrics ? "Compare all models compares one metric: choose one" : "";
    $("rank-btn").disabled = busy || !loaded || $("model_a").options.length < 3; // two: Compare answers them
    $("form-hint").textContent = problem;
    $("form-hint").hidden = !problem;
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

  // Resolves true once the dropdowns show the experiment's choices (false when a newer question replaced this one).
  function loadChoices() {
    const eid = $("experiment").value;
    if (!eid) {
      updateButtons();
      return Promise.resolve(false);
    }
    const q = new URLSearchParams({
      experiment_id: eid,
      model_key: tagName("model_key"),
      dataset_key: tagName("dataset_key"),
    });
    const current = choicesTurn();
    $("choices-info").textContent = "reading the experiment…";
    return api("/api/choices?" + q.toString())
      .then((c) => {
        if (!current()) return false;
        fill($("metric"), c.metrics, 0);
        $("metric").size = Math.min(Math.max(c.metrics.length, 1), 4);
        fill($("model_a"), c.models, 0);
        fill($("model_b"), c.models, 1);
        fillAgainst(c.models);
        $("choices-info").textContent = [counted(c.models.length, "model"), counted(c.datasets.length, "dataset"),
          counted(c.runs, "run")].join(" · ");
        showFormError("");
        updateButtons();
        return true;
      })
      .catch((e) => {
        if (!current()) return false;
        $("choices-info").textContent = "";
        showFormError(e.message);
        updateButtons();
        return false;
      });
  }

  // A number as typed (the server says what is wrong with it: never rounded or fixed here), or undefined if empty;
  // other text as it is (a rope per metric: accuracy=0.01,fit_time=0.5).
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
      metric: chosen($("metric")).join(","),
      rope: numberField("rope"),
      lower_is_better: $("direction").value === "lower",
      direction: $("direction_per_metric").value.trim() || undefined,
      seed: numberField("seed"),
      chains: numberField("chains"),
      draws: numberField("draws"),
      threshold: numberField("threshold"),
      prior: $("prior").value,
      layout: $("layout").value,
      model_key: tagName("model_key"),
      dataset_key: tagName("dataset_key"),
      filter: $("filter").value,
      target_experiment: $("target_experiment").value || undefined,
    };
    Object.keys(fields).forEach((k) => fields[k] === undefined && delete fields[k]);
    return fields;
  }

  // A ranking takes the form's rope as its rope in metric units, and the prior of the two-model test is not its own.
  function rankFields() {
    const fields = Object.assign(commonFields(), { metric_rope: numberField("rope"), vs: $("vs").value || undefined });
    ["rope", "prior"].forEach((k) => delete fields[k]);
    Object.keys(fields).forEach((k) => fields[k] === undefined && delete fields[k]);
    return fields;
  }

  const truthy = (v) => v === true || String(v).toLowerCase() === "true";

  // The form as the run was asked for (its params, or its job request): experiment, metrics, models and settings.
  // A ranking's rope is its interval of P(win), never the form's rope in metric units: that one is its
  // metric_rope (which a Bradley–Terry ranking does not use: the field is then left as it is); its reference (vs)
  // goes back into "against".
  function fillForm(job) {
    if (job.source_runs) {
      // a comparison of runs (not of an experiment's models): the part of the page that starts one refills itself
      document.dispatchEvent(new CustomEvent("bayescompare:refill", { detail: job }));
      return;
    }
    const s = job.settings || {};
    const metricRope = rankingOf(job.ranking_model).metric_rope !== false;
    const rope = job.kind !== "ranking" ? s.rope : metricRope ? s.metric_rope : undefined;
    const inputs = { rope: rope, seed: s.seed, chains: s.chains, draws: s.draws, threshold: s.threshold,
      model_key: s.model_key || (s.model_tag && "tag:" + s.model_tag),
      dataset_key: s.dataset_key || (s.dataset_tag && "tag:" + s.dataset_tag), filter: s.filter_string,
      target_experiment: s.target_experiment };
    Object.entries(inputs).forEach(([id, v]) => {
      if (v !== undefined && v !== null) $(id).value = String(v);
    });
    choose($("prior"), s.prior);
    choose($("layout"), s.layout);
    if (s.greater_is_better !== undefined) $("direction").value = truthy(s.greater_is_better) ? "higher" : "lower";
    $("direction_per_metric").value = s.direction || "";
    if (job.kind === "comparison") $("sensitivity").checked = truthy(s.sensitivity);
    const eid = (s.experiment_ids || [])[0];
    if (eid === undefined || !Array.from($("experiment").options).some((o) => o.value === String(eid))) return;
    $("experiment").value = String(eid);
    loadChoices().then((shown) => {
      if (!shown) return;
      const metrics = String(s.metric || job.metric || "").split(",");
      const known = metrics.filter((m) => Array.from($("metric").options).some((o) => o.value === m));
      if (known.length) selectValues($("metric"), known);
      choose($("model_a"), job.model_a);
      choose($("model_b"), job.model_b);
      $("vs").value = job.kind === "ranking" ? s.vs || "" : "";
      updateButtons();
    });
  }

  function start(path, fields, title) {
    showFormError("");
    busy = true;
    updateButtons();
    return api(path, { method: "POST", body: fields })
      .then((job) => {
        history.replaceState(null, "", BASE + "/?run_id=" + encodeURIComponent(job.run_id));
        follow(job.run_id, title);
        refreshHistory();
      })
      .catch((e) => showFormError(e.message))
      .finally(() => {
        busy = false;
        updateButtons();
      });
  }

  // ---------------------------------------------------------------------------------------------- the job

  // "1 dataset", "3 datasets": the twin of result.counted.
  function counted(n, noun) {
    return n + " " + noun + (n === 1 ? "" : "s");
  }

  // A probability as the reports write it (report_html.format_probability, its twin in Python): three decimals, a
  // half rounded up, "<0.001" and ">0.999" at the ends, never a negative zero; "" for none.
  function probability(p) {
    if (typeof p !== "number" || !Number.isFinite(p)) return "";
    if (p > 0 && p < 0.0005) return "<0.001";
    if (p >= 0.9995 && p < 1) return ">0.999";
    return Math.min(Math.max(p, 0), 1).toFixed(3);
  }

  // The stages the job went through lit, the current one marked, those it went past without doing (a compile when
  // the model was cached: the job's "skipped") shown as such.
  function showStages(job) {
    $("stages").hidden = !job.job; // a run of the command line or the Python API went through no stages shown here
    const idx = STAGES.indexOf(job.stage);
    const skipped = job.skipped || [];
    document.querySelectorAll("#stages li").forEach((li) => {
      const i = STAGES.indexOf(li.dataset.stage);
      const passed = i < idx || job.status === "FINISHED";
      li.className = "";
      if (job.status === "FAILED" && li.dataset.stage === job.stage) li.className = "failed";
      else if (passed) li.className = skipped.includes(li.dataset.stage) ? "skipped" : "past";
      else if (i === idx) li.className = "current";
      li.textContent = li.className === "skipped" ? li.dataset.skipped : li.dataset.label;
    });
  }

  function jobTitle(job) {
    const metrics = (job.metric || "").split(",").join(", ");
    const ranked = job.source_runs ? " evaluation runs · " : " models · "; // runs ranked, or an experiment's models
    if (job.kind === "ranking") return "Ranking of " + (job.models || []).length + ranked + metrics;
    if (job.kind === "matrix") return "All models (" + (job.models || []).length + ") · " + metrics;
    return (job.model_a || "A") + " vs " + (job.model_b || "B") + " · " + metrics;
  }

  // "Pairs: <test>": the test that compared them, as each pair's run says.
  function pairsCaption(pairs) {
    const tests = Array.from(new Set(pairs.map((p) => p.test).filter((t) => t)));
    return tests.length ? "Pairs: " + tests.map((t) => testOf(t).title || t).join("; ") : "Pairs";
  }

  function renderPair(job) {
    $("test-used").textContent = job.test ? "Test: " + (testOf(job.test).title || job.test) : "";
    $("test-used").dataset.test = job.test || "";
    $("test-used").hidden = !job.test;
    $("probs-caption").hidden = !testOf(job.test).next_dataset; // the probabilities are the next dataset's
    $("label-a").textContent = "P(" + job.model_a + " better)";
    $("label-b").textContent = "P(" + job.model_b + " better)";
    $("p-a").textContent = probability(job.p_a_better);
    $("p-rope").textContent = probability(job.p_rope);
    $("p-b").textContent = probability(job.p_b_better);
    $("bar-a").style.width = 100 * (job.p_a_better || 0) + "%";
    $("bar-rope").style.width = 100 * (job.p_rope || 0) + "%";
    $("bar-b").style.width = 100 * (job.p_b_better || 0) + "%";
  }

  // A comparison on several metrics: each metric's verdict and probabilities.
  function renderByMetric(job) {
    const next = $("probs-caption"); // probabilities of the next dataset (the hierarchical test's): say so
    const labelled = job.metrics.every((m) => testOf(m.test).next_dataset);
    const per = testOf(job.metrics[0].test).per || "metric"; // a decision per metric, or per scorer
    $("by-metric-per").textContent = per.charAt(0).toUpperCase() + per.slice(1);
    $("by-metric-caption").textContent = "By " + per + (labelled ? " · " + next.textContent : "");
    $("by-metric-caption").title = labelled ? next.title : "";
    $("by-metric-a").textContent = "P(" + job.model_a + " better)";
    $("by-metric-b").textContent = "P(" + job.model_b + " better)";
    fillTable($("by-metric"), job.metrics.map((m) => [m.metric, m.verdict, probability(m.p_a_better),
      probability(m.p_rope), probability(m.p_b_better)]));
  }

  function fillRanking(table, rows) {
    fillTable(table, rows.map((r, i) => [i + 1, r.model, probability(r.p_best),
      typeof r.mean_rank === "number" ? r.mean_rank.toFixed(2) : "", rankInterval(r)]));
  }

  function fillVersus(table, rows, model) {
    // the joint model of one dataset speaks of that dataset; a ranking of evaluation runs of its items
    const next = rankingOf(model).next_dataset === false ? ""
      : rows[0].next_better === undefined ? " on this dataset" : " on the next dataset";
    table.caption.textContent = "Against " + rows[0].reference + next;
    const shown = signed(rows.flatMap((r) => [r.difference, r.hdi_low, r.hdi_high])); // one number of decimals
    fillTable(table, rows.map((r, i) => [r.model, r.verdict, probability(r.p_better), probability(r.p_rope),
      probability(r.p_worse), shown[3 * i], "[" + shown[3 * i + 1] + ", " + shown[3 * i + 2] + "]"]));
  }

  function rankingCaption(model) {
    return "Ranking (" + (rankingOf(model).title || model) + ")";
  }

  // A copy of the page's table `id` (without ids) for one metric of a ranking on several.
  function tableFor(id, metric) {
    const table = $(id).cloneNode(true);
    [table, ...table.querySelectorAll("[id]")].forEach((e) => e.removeAttribute("id"));
    table.hidden = false;
    table.dataset.metric = metric;
    return table;
  }

  // A ranking on several metrics: each metric's ranking side by side, then each one's table against the reference
  // when asked (too wide to stand side by side).
  function renderRankings(job) {
    const box = $("rankings");
    const against = $("versus-by-metric");
    box.replaceChildren();
    against.replaceChildren();
    job.metrics.forEach((m) => {
      const ranking = tableFor("ranking", m.metric);
      ranking.caption.textContent = m.metric + " · " + rankingCaption(m.ranking_model);
      fillRanking(ranking, job.rankings[m.metric] || []);
      const part = document.createElement("div");
      part.className = "metric-ranking";
      part.appendChild(ranking);
      box.appendChild(part);
      const versus = (job.versus || {})[m.metric];
      if (!versus || !versus.length) return;
      const table = tableFor("versus", m.metric);
      fillVersus(table, versus, m.ranking_model);
      table.caption.textContent = m.metric + " · " + table.caption.textContent;
      against.appendChild(table);
    });
    against.hidden = !against.children.length;
  }

  function fillTable(table, rows) {
    const tbody = table.tBodies[0];
    tbody.replaceChildren();
    rows.forEach((cells) => {
      const tr = tbody.insertRow();
      cells.forEach((text, i) => {
        const td = tr.insertCell();
        td.textContent = text === undefined || text === null ? "" : String(text);
        if (table.tHead.rows[0].cells[i].classList.contains("num")) td.className = "num";
      });
    });
  }

  // A pair the way the ranking reads: the model more probably better first (ties keep the run's order).
  function betterFirst(p) {
    const swap = p.p_b_better > p.p_a_better;
    return { first: swap ? p.model_b : p.model_a, second: swap ? p.model_a : p.model_b, verdict: p.verdict,
      p_first: swap ? p.p_b_better : p.p_a_better, p_rope: p.p_rope, p_second: swap ? p.p_a_better : p.p_b_better };
  }

  // Differences in metric units shown together, signed, all with one number of decimals: enough for three
  // significant digits of the largest, at most six, never an exponent or a negative zero (the twin of
  // report_html.format_differences, as the command line and the reports write them).
  function signed(values) {
    const largest = Math.max(0, ...values.filter((v) => Number.isFinite(v)).map(Math.abs));
    const decimals = largest > 0 ? Math.min(6, Math.max(0, 2 - Math.floor(Math.log10(largest)))) : 0;
    return values.map((v) => {
      if (typeof v !== "number" || Number.isNaN(v)) return "–";
      if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
      const text = v.toFixed(decimals);
      return Number(text) === 0 ? text.replace("-", "") : (v > 0 ? "+" : "") + text;
    });
  }

  function rankInterval(r) {
    return typeof r.rank_low === "number" ? r.rank_low + "–" + r.rank_high : "";
  }

  function renderReport(job, done) {
    const report = $("report");
    if (done && job.report_url) {
      const src = job.report_url + "&embed=1";
      if (report.dataset.src !== src) {
        report.dataset.src = src;
        report.style.height = "";
        report.src = src;
      }
      report.hidden = false;
    } else {
      report.hidden = true;
    }
  }

  // The frame as tall as the report (it runs no script; allow-same-origin lets the page measure it).
  function fitReport() {
    const report = $("report");
    const doc = report.contentDocument;
    if (report.hidden || !doc || !doc.documentElement) return;
    report.style.height = "0px";
    report.style.height = doc.documentElement.scrollHeight + 2 + "px";
  }

  // ---------------------------------------------------------------------------------------------- a watch

  const SVG = "http://www.w3.org/2000/svg";

  function svgElement(name, attributes, text) {
    const el = document.createElementNS(SVG, name);
    Object.keys(attributes).forEach((k) => el.setAttribute(k, String(attributes[k])));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  function svgChild(parent, name, attributes, text) {
    return parent.appendChild(svgElement(name, attributes, text));
  }

  // A look's answer in words (sequential/report.py's ANSWER_WORDS, its twin in Python).
  function answerWords(answer, job) {
    const words = { continue: "continue", a_better: job.model_a + " better", b_better: job.model_b + " better",
      equivalent: "practically equivalent", inconclusive: "inconclusive at the budget" };
    return words[answer] || answer || "";
  }

  // The watch's path: each probability after each look (x: the look's size, up to the budget; y: 0 to 1), the
  // design's threshold as a dashed line, and the table of looks.
  function renderWatch(job) {
    const w = job.watch, d = w.design, rows = w.rows || [];
    $("watch-design").textContent = d.test + ", rope ±" + d.rope + ", threshold " + d.threshold + ", looks from " +
      d.min_size + " to " + d.max_size + " " + w.unit + " · design " + (w.fingerprint || "").slice(0, 12);
    // made here, not in the page: a page with no watch shown holds no svg (tests/test_security.py counts them)
    $("watch-path")?.remove();
    const svg = svgElement("svg", { id: "watch-path", class: "watch-path", viewBox: "0 0 600 220", role: "img" });
    svgChild(svg, "title", {}, "The probabilities after each look, and the threshold");
    $("watch-design").after(svg);
    const left = 40, right = 590, top = 10, bottom = 190;
    const low = Math.min(d.min_size, rows.length ? rows[0].size : d.min_size);
    const x = (size) => left + (right - left) * (d.max_size === low ? 1 : (size - low) / (d.max_size - low));
    const y = (p) => bottom - (bottom - top) * p;
    svgChild(svg, "path", { class: "axis", d: "M" + left + " " + top + "V" + bottom + "H" + right });
    svgChild(svg, "line", { class: "threshold", x1: left, x2: right, y1: y(d.threshold), y2: y(d.threshold) });
    svgChild(svg, "text", { x: left - 4, y: y(d.threshold) + 4, "text-anchor": "end" }, String(d.threshold));
    [[1, top + 4], [0, bottom]].filter(([p]) => Math.abs(y(p) - y(d.threshold)) > 12).forEach(([p, at]) =>
      svgChild(svg, "text", { x: left - 4, y: at, "text-anchor": "end" }, String(p)));
    [[low, "start"], [d.max_size, "end"]].forEach(([size, anchor]) =>
      svgChild(svg, "text", { x: x(size), y: bottom + 16, "text-anchor": anchor }, size + " " + w.unit));
    [["a", "p_a_better"], ["rope", "p_rope"], ["b", "p_b_better"]].forEach(([cls, key]) => {
      const points = rows.map((r) => x(r.size).toFixed(1) + "," + y(r[key]).toFixed(1));
      svgChild(svg, "polyline", { class: cls, points: points.join(" ") });
      rows.forEach((r) => svgChild(svg, "circle", { class: cls, cx: x(r.size), cy: y(r[key]), r: 3 }));
    });
    const last = rows[rows.length - 1]; // each line named at its last look
    if (last) [["p_a_better", job.model_a], ["p_rope", "rope"], ["p_b_better", job.model_b]].forEach(([key, name]) =>
      svgChild(svg, "text", { x: x(last.size) + 6, y: y(last[key]) + 4 }, name));
    $("looks-unit").textContent = w.unit.charAt(0).toUpperCase() + w.unit.slice(1);
    $("looks-a").textContent = "P(" + job.model_a + " better)";
    $("looks-b").textContent = "P(" + job.model_b + " better)";
    fillTable($("looks"), rows.map((r) => [r.size, probability(r.p_a_better), probability(r.p_rope),
      probability(r.p_b_better), answerWords(r.answer, job)]));
  }

  function render(job) {
    $("job").hidden = false;
    $("job-title").textContent = jobTitle(job);
    showStages(job);
    const watch = job.kind === "watch" && job.watch ? job.watch : null; // RUNNING between looks, by design
    $("job-status").textContent = watch && job.status === "RUNNING"
      ? "Watching: undecided at the last look; the next run of watch looks again"
      : job.status === "RUNNING" ? "Running: " + (job.stage || "queued") + "…" : job.status;
    $("job-status").dataset.status = job.status;
    const err = $("job-error");
    err.hidden = !job.error;
    err.textContent = job.error ? "Failed: " + job.error : "";
    $("run-link").href = job.run_url;
    $("compare-link-line").hidden = !job.compare_url; // MLflow's own view of the two runs a comparison read
    if (job.compare_url) $("compare-link").href = job.compare_url;
    $("run-link").textContent = "Open the " + (job.kind || "comparison") + " run in the MLflow UI";
    const done = job.status === "FINISHED";
    const pair = done && job.kind === "comparison";
    const byMetric = pair && Array.isArray(job.metrics); // several metrics: a row each, no single bar
    $("result").hidden = !(done || job.status === "FAILED" || watch);
    $("watch").hidden = !watch;
    if (watch) renderWatch(job);
    $("verdict").textContent = job.verdict || "";
    ["bar", "probs"].forEach((id) => ($(id).hidden = !pair || byMetric));
    $("test-used").hidden = !pair;
    if (pair) renderPair(job);
    $("by-metric").hidden = !byMetric;
    if (byMetric) renderByMetric(job);
    $("sensitivity-note").hidden = !(pair && truthy((job.settings || {}).sensitivity));
    const ranking = done && job.ranking ? job.ranking : null;
    $("ranking").hidden = !ranking;
    $("ranking-caption").textContent = rankingCaption(job.ranking_model);
    if (ranking) fillRanking($("ranking"), ranking);
    const versus = done && Array.isArray(job.versus) ? job.versus : null;
    $("versus").hidden = !versus;
    if (versus) fillVersus($("versus"), versus, job.ranking_model);
    const rankings = done && job.rankings && Array.isArray(job.metrics);
    ["rankings", "versus-by-metric"].forEach((id) => ($(id).hidden = !rankings));
    if (rankings) renderRankings(job);
    const pairs = done && job.pairs ? job.pairs.map(betterFirst) : null;
    $("pairs").hidden = !pairs;
    if (pairs) $("pairs-caption").textContent = pairsCaption(job.pairs);
    if (pairs)
      fillTable($("pairs"), pairs.map((p) => [p.first + " vs " + p.second, p.verdict, probability(p.p_first),
        probability(p.p_rope), probability(p.p_second)]));
    const differ = pairs && ranking ? rankingOf(job.ranking_model).differs : undefined;
    $("pairs-differ").hidden = !differ;
    $("pairs-differ").textContent = differ || "";
    renderReport(job, done);
    updatePastRow(job);
  }

  function follow(runId, title, refill) {
    if (polling) clearTimeout(polling);
    $("job").hidden = false;
    if (title) $("job-title").textContent = title;
    const current = followTurn();
    let first = true;
    const tick = () =>
      api("/api/comparisons/get?run_id=" + encodeURIComponent(runId))
        .then((job) => {
          if (!current()) return;
          render(job);
          if (first && refill) fillForm(job);
          first = false;
          if (job.status === "RUNNING" && job.kind !== "watch") polling = setTimeout(tick, 1500);
          else refreshHistory();
        })
        .catch((e) => {
          if (!current()) return;
          $("job-error").hidden = false;
          $("job-error").textContent = e.message;
        });
    tick();
  }

  // ---------------------------------------------------------------------------------------------- past comparisons

  function statusText(c) {
    if (c.kind === "watch" && c.status === "RUNNING") return "RUNNING · between looks"; // until decided
    return c.status + (c.status === "RUNNING" && c.stage ? " · " + c.stage : "");
  }

  function pastName(c) {
    const model = c.ranking_model || ((c.metrics || [])[0] || {}).ranking_model;
    // the model that ranked, by its short name (a BBT ranking and a hierarchical one looked alike otherwise)
    const by = model ? " · " + (rankingOf(model).short || model) : "";
    if (c.kind === "ranking") return "ranking of " + (c.models || []).length + " models" + by;
    if (c.kind === "matrix") return (c.models || []).length + " models" + by;
    return c.model_a + " vs " + c.model_b;
  }

  const PAST_COLUMNS = 10;
  const expanded = new Set(); // the matrices whose pairs are shown, kept as the list is refreshed

  // One row of Past comparisons: start, experiment, comparison, metric, status, verdict, P(A), P(rope), P(B), link.
  // A matrix's pairs (parent: its run id) sit under it, hidden until it is unfolded.
  function historyRow(c, parent) {
    const tr = document.createElement("tr");
    tr.dataset.runId = c.run_id;
    if (parent) {
      tr.className = "pair";
      tr.dataset.parent = parent;
      tr.hidden = !expanded.has(parent);
    }
    const cells = [];
    for (let i = 0; i < PAST_COLUMNS; i++) cells.push(tr.insertCell());
    cells[0].className = "time";
    cells[0].dataset.ms = c.start_time || "";
    cells[1].className = "experiment";
    cells[1].textContent = parent ? "" : c.experiment_name || c.experiment_id || "";
    const show = document.createElement("a");
    show.className = "show";
    show.href = BASE + "/?run_id=" + encodeURIComponent(c.run_id);
    show.textContent = pastName(c);
    cells[2].appendChild(show);
    if ((c.pairs || []).length) cells[2].appendChild(pairsToggle(c));
    cells[3].textContent = c.metric || "";
    cells[4].className = "status " + String(c.status).toLowerCase();
    cells[4].textContent = statusText(c);
    cells[5].textContent = c.verdict || c.error || "";
    [c.p_a_better, c.p_rope, c.p_b_better].forEach((p, i) => {
      cells[6 + i].className = "num";
      cells[6 + i].textContent = probability(p);
    });
    const link = document.createElement("a");
    link.href = c.run_url;
    link.textContent = "MLflow run";
    cells[9].appendChild(link);
    return tr;
  }

  // The button that shows or hides a matrix's pairs.
  function pairsToggle(c) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "toggle";
    button.dataset.parent = c.run_id;
    showToggle(button, expanded.has(c.run_id), c.pairs.length);
    return button;
  }

  function showToggle(button, open, count) {
    button.setAttribute("aria-expanded", String(open));
    button.textContent = (open ? "▾ hide " : "▸ ") + counted(count, "pair");
  }

  function togglePairs(button) {
    const parent = button.dataset.parent;
    const open = !expanded.has(parent);
    if (open) expanded.add(parent);
    else expanded.delete(parent);
    const rows = document.querySelectorAll('#past tr.pair[data-parent="' + parent + '"]');
    rows.forEach((tr) => (tr.hidden = !open));
    showToggle(button, open, rows.length);
  }

  // The row of the job followed, kept up with its stage while it runs, and its name once the run says which model
  // ranked (the list itself is read again only after the job ends: a reader of the row at that moment saw the name
  // of the running job).
  function updatePastRow(job) {
    const row = document.querySelector('#past tr[data-run-id="' + job.run_id + '"]');
    if (!row) return;
    const td = row.querySelector("td.status");
    td.className = "status " + String(job.status).toLowerCase();
    td.textContent = statusText(job);
    if (!row.classList.contains("pair")) row.querySelector("a.show").textContent = pastName(job);
  }

  function formatTimes() {
    document.querySelectorAll("#past td.time").forEach((td) => {
      const ms = Number(td.dataset.ms);
      td.textContent = ms ? new Date(ms).toLocaleString() : "";
    });
  }

  function refreshHistory() {
    const current = historyTurn();
    const q = new URLSearchParams({ max_results: "20" });
    if ($("history-experiment").value) q.set("experiment_id", $("history-experiment").value);
    return api("/api/comparisons?" + q.toString())
      .then((data) => {
        if (!current()) return;
        const tbody = $("past").tBodies[0];
        tbody.replaceChildren();
        data.comparisons.forEach((c) => {
          tbody.appendChild(historyRow(c));
          (c.pairs || []).forEach((p) => tbody.appendChild(historyRow(p, c.run_id)));
        });
        if (!data.comparisons.length) {
          const td = tbody.insertRow().insertCell();
          td.colSpan = PAST_COLUMNS;
          td.textContent = "No comparison yet.";
        }
        formatTimes();
      })
      .catch(() => {});
  }

  // ---------------------------------------------------------------------------------------------- events

  $("past").addEventListener("click", (ev) => {
    const toggle = ev.target.closest("button.toggle");
    if (toggle) togglePairs(toggle);
    const a = ev.target.closest("a.show");
    if (!a) return;
    ev.preventDefault();
    const runId = a.closest("tr").dataset.runId;
    history.replaceState(null, "", a.href);
    follow(runId, undefined, true);
    $("job").scrollIntoView({ behavior: "smooth" });
  });

  // another part of the page started a job: follow it here, as one started by this form
  document.addEventListener("bayescompare:follow", (ev) => {
    history.replaceState(null, "", BASE + "/?run_id=" + encodeURIComponent(ev.detail.runId));
    follow(ev.detail.runId, ev.detail.title);
    refreshHistory();
  });
  $("experiment").addEventListener("change", loadChoices);
  $("model_key").addEventListener("change", loadChoices);
  $("dataset_key").addEventListener("change", loadChoices);
  ["metric", "model_a", "model_b"].forEach((id) => $(id).addEventListener("change", updateButtons));
  $("history-experiment").addEventListener("change", refreshHistory);
  $("report").addEventListener("load", fitReport);
  window.addEventListener("resize", fitReport);

  $("compare-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    if (formProblem()) return;
    const fields = Object.assign(commonFields(), {
      model_a: $("model_a").value,
      model_b: $("model_b").value,
      sensitivity: $("sensitivity").checked,
    });
    start("/api/comparisons", fields, fields.model_a + " vs " + fields.model_b);
  });

  // every model found in the experiment (the server finds them, as it checks the request)
  $("matrix-btn").addEventListener("click", () =>
    start("/api/matrix", Object.assign(commonFields(), { refresh: $("refresh").checked }), "All models"));
  $("rank-btn").addEventListener("click", () =>
    start("/api/rankings", rankFields(), "Ranking" + ($("vs").value ? " against " + $("vs").value : "")));

  updateButtons();
  loadChoices();
  refreshHistory();
  if (body.dataset.runId) follow(body.dataset.runId, undefined, true);
})();
