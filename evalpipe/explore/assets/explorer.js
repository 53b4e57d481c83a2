"use strict";
// explorer.html: every sample of a run, or of a paired comparison with the flips first.
// Plain JS, no dependency, no network. Model text is written with textContent only (never as HTML).
(function () {
  const DATA = JSON.parse(document.getElementById("explorer-data").textContent);
  const PAIRED = DATA.mode === "paired";
  const FLIP_TEXT = {regression: "regression", improvement: "improvement", answers_differ: "answers differ, same score", same: "same"};
  const VERDICTS = [["regression", "regression"], ["grader_error", "grader error"], ["noise", "noise"]];
  const LENGTHS = [["", "any length"], ["short", "< 256 output tokens"], ["medium", "256 – 2,047"], ["long", "2,048 – 8,191"], ["xlong", "≥ 8,192"], ["cut", "cut by the budget"]];
  const TRACE_STEP = 20000;
  const byKey = new Map(DATA.samples.map((s) => [s.key, s]));
  const cards = new Map();
  const selected = new Set();
  const storeKey = "evalpipe-verdicts-" + DATA.manifest_sha256;
  let verdicts = {};
  try { verdicts = JSON.parse(localStorage.getItem(storeKey) || "{}") || {}; } catch (e) { verdicts = {}; }
  const state = {key: "", bench: "", stratum: "", fail: "", flip: "", len: "", q: ""};
  let visible = [];
  let searchToken = 0;

  // ---------------------------------------------------------------- DOM helpers (text only)
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function put(node, ...kids) { for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) node.append(k); return node; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function shellWord(text) { return /^[\w.\/:@%+=,-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'"; }
  function fmt(x, digits) { return x === null || x === undefined ? "—" : typeof x === "number" ? (digits === undefined ? x.toLocaleString("en") : x.toFixed(digits)) : String(x); }

  async function decode(b64) {
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }
  async function card(key) {
    if (!cards.has(key)) cards.set(key, await decode(byKey.get(key).card));
    return cards.get(key);
  }

  // ---------------------------------------------------------------- URL hash state
  function readHash() {
    const raw = location.hash.replace(/^#/, "");
    const q = raw.indexOf("?");
    const path = q === -1 ? raw : raw.slice(0, q);
    const params = new URLSearchParams(q === -1 ? "" : raw.slice(q + 1));
    const slash = path.indexOf("/");
    state.key = slash === -1 ? "" : decodeURIComponent(path.slice(0, slash)) + "/" + decodeURIComponent(path.slice(slash + 1));
    for (const name of ["bench", "stratum", "fail", "flip", "len", "q"]) state[name] = params.get(name) || "";
  }
  // a readable, stable anchor: benchmark/source_id with "/" kept, "?", "#", "%" and spaces escaped
  function anchor(text) { return encodeURIComponent(text).replace(/%2F/g, "/"); }
  function writeHash() {
    const params = new URLSearchParams();
    for (const name of ["bench", "stratum", "fail", "flip", "len", "q"]) if (state[name]) params.set(name, state[name]);
    let path = "";
    if (state.key) {
      const s = byKey.get(state.key);
      path = s ? anchor(s.benchmark) + "/" + anchor(s.source_id) : "";
    }
    const qs = params.toString();
    const hash = "#" + path + (qs ? "?" + qs : "");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // ---------------------------------------------------------------- filters
  // the longest arm's output decides the bucket; "cut": an arm the output budget stopped
  function lengthMatches(s, want) {
    if (want === "cut") return s.budget_cut.some(Boolean);
    const t = Math.max(...s.output_tokens.map((x) => x || 0));
    return want === (t < 256 ? "short" : t < 2048 ? "medium" : t < 8192 ? "long" : "xlong");
  }
  function regex() {
    if (!state.q) return null;
    try { return new RegExp(state.q, "i"); } catch (e) { return undefined; }
  }
  function passesPlain(s) {
    if (state.bench && s.benchmark !== state.bench) return false;
    if (state.stratum && s.stratum !== state.stratum) return false;
    if (state.fail && !s.failure.includes(state.fail)) return false;
    if (state.flip && s.flip !== state.flip) return false;
    if (state.len && !lengthMatches(s, state.len)) return false;
    return true;
  }
  function cardText(c) {
    return [...c.prompt.map((m) => m.content), c.question || "", ...c.arms.map((a) => a.answer || "")].join("\n");
  }
  async function applyFilters() {
    const token = ++searchToken;
    const re = regex();
    ui.qError.textContent = re === undefined ? "not a regular expression" : "";
    const plain = DATA.samples.filter(passesPlain);
    let out = plain;
    if (re) {
      out = [];
      for (const s of plain) {
        if (re.test(s.search)) out.push(s);
        else if (s.search_partial && re.test(cardText(await card(s.key)))) out.push(s);
        if (token !== searchToken) return;
      }
    }
    visible = out;
    renderQueue();
    writeHash();
    if (state.key && !visible.some((s) => s.key === state.key) && visible.length) state.key = "";
    if (!state.key && visible.length) await show(visible[0].key, false);
    else if (state.key) await show(state.key, false);
    else clear(ui.card).append(el("p", {class: "empty", text: "No sample matches the filters."}));
  }

  // ---------------------------------------------------------------- the queue
  function badge(kind, text) { return el("span", {class: "badge " + kind, text: text}); }
  function renderQueue() {
    clear(ui.queue);
    ui.count.textContent = visible.length + " of " + DATA.samples.length + " samples";
    const frag = document.createDocumentFragment();
    for (const s of visible) {
      const check = el("input", {type: "checkbox", "aria-label": "select " + s.key, onclick: (ev) => { ev.stopPropagation(); if (ev.target.checked) selected.add(s.key); else selected.delete(s.key); }});
      check.checked = selected.has(s.key);
      const li = el("li", {"data-key": s.key, class: s.key === state.key ? "current" : "", onclick: () => show(s.key, true)},
        check,
        PAIRED ? badge("flip-" + s.flip, FLIP_TEXT[s.flip]) : badge(s.correct[0] ? "ok" : "bad", s.failure[0]),
        s.aa_flip ? badge("noise", "A/A") : null,
        verdicts[s.key] ? badge("verdict", verdicts[s.key].verdict.replace("_", " ")) : null,
        el("span", {class: "key", text: s.key}));
      frag.append(li);
    }
    ui.queue.append(frag);
  }
  function move(step) {
    if (!visible.length) return;
    const i = visible.findIndex((s) => s.key === state.key);
    const next = visible[Math.max(0, Math.min(visible.length - 1, (i === -1 ? -1 : i) + step))];
    show(next.key, true);
  }

  // ---------------------------------------------------------------- the card
  // a prompt message as text, its evidence spans (a generated long-context item) marked; never parsed as HTML
  function withEvidence(m) {
    const spans = (m.evidence || []).slice().sort((a, b) => a.start - b.start);
    if (!spans.length) return el("pre", {text: m.content});
    const parts = [];
    let at = 0;
    for (const s of spans) {
      if (s.start < at) continue;
      parts.push(m.content.slice(at, s.start), el("mark", {class: "evidence", title: "evidence", text: m.content.slice(s.start, s.end)}));
      at = s.end;
    }
    parts.push(m.content.slice(at));
    return el("pre", {class: "has-evidence"}, ...parts);
  }
  function pointer(cut) {
    if (!cut) return null;
    const where = cut.responses_line ? "line " + fmt(cut.responses_line) + " of zcat responses.jsonl.gz (body sha256 " + (cut.body_sha256 || "—") + ")" : "the prompt of the sample's prediction row in the run's evalscope/ folder";
    const windows = cut.evidence_windows ? " and " + fmt(cut.evidence_windows) + " window(s) around the evidence" : "";
    return el("p", {class: "cut", text: "Kept: first and last " + fmt(cut.kept_head) + " of " + fmt(cut.chars) + " characters" + windows + ". Whole text: " + where + "."});
  }
  function traceView(arm, side) {
    const box = el("div", {class: "trace"});
    const head = el("div", {class: "trace-head"}, el("strong", {text: arm.label}), " reasoning: " + fmt(arm.reasoning.length) + " characters, " + fmt(arm.reasoning_tokens) + " tokens ",
      arm.budget_cut ? badge("bad", "cut by the budget") : null,
      el("button", {type: "button", class: "jump", text: "jump to the final answer", onclick: () => document.getElementById("answer-" + side).scrollIntoView({block: "center"})}));
    const pre = el("pre", {class: "trace-text"});
    let shown = 0;
    const more = el("button", {type: "button", class: "more"});
    function renderChunk() {
      const end = Math.min(arm.reasoning.length, shown + TRACE_STEP);
      pre.append(document.createTextNode(arm.reasoning.slice(shown, end)));
      shown = end;
      more.textContent = "show " + fmt(Math.min(TRACE_STEP, arm.reasoning.length - shown)) + " more characters";
      more.hidden = shown >= arm.reasoning.length;
    }
    more.addEventListener("click", renderChunk);
    renderChunk();
    box.search = (re) => {
      clear(pre);
      if (!re) { shown = 0; renderChunk(); return 0; }
      let last = 0, n = 0;
      const g = new RegExp(re.source, "gi");
      let m;
      while ((m = g.exec(arm.reasoning)) && n < 1000) {
        if (m[0] === "") { g.lastIndex++; continue; }
        pre.append(document.createTextNode(arm.reasoning.slice(last, m.index)), el("mark", {text: m[0]}));
        last = m.index + m[0].length;
        n++;
      }
      pre.append(document.createTextNode(arm.reasoning.slice(last)));
      shown = arm.reasoning.length;
      more.hidden = true;
      const first = pre.querySelector("mark");
      if (first) first.scrollIntoView({block: "nearest"});
      return n;
    };
    put(box, head, pointer(arm.reasoning_cut), pre, more);
    return box;
  }
  // words with their trailing space, compared without it; a changed run shows its deletions, then its insertions
  function wordDiff(a, b) {
    const x = a.match(/\S+\s*|\s+/g) || [], y = b.match(/\S+\s*|\s+/g) || [];
    const kx = x.map((t) => t.trim()), ky = y.map((t) => t.trim());
    const out = el("div", {class: "diff"});
    let del = "", ins = "";
    const flush = () => { if (del) out.append(el("del", {text: del})); if (ins) out.append(el("ins", {text: ins})); del = ins = ""; };
    const same = (t) => { flush(); const last = out.lastChild; if (last && last.nodeName === "SPAN") last.textContent += t; else out.append(el("span", {text: t})); };
    const n = x.length, m = y.length;
    if (n * m > 4e6) {  // too long for the table: common head and tail, one changed run between
      let p = 0;
      while (p < n && p < m && kx[p] === ky[p]) p++;
      let q = 0;
      while (q < n - p && q < m - p && kx[n - 1 - q] === ky[m - 1 - q]) q++;
      same(x.slice(0, p).join(""));
      del = x.slice(p, n - q).join(""); ins = y.slice(p, m - q).join("");
      same(y.slice(m - q).join(""));
      return out;
    }
    const L = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = kx[i] === ky[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (kx[i] === ky[j]) { same(y[j]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) del += x[i++]; else ins += y[j++];
    }
    while (i < n) del += x[i++];
    while (j < m) ins += y[j++];
    flush();
    return out;
  }
  function fieldsTable(c) {
    const rows = [
      ["final answer", (a, i) => el("pre", {class: "answer", id: "answer-" + i, text: a.answer === undefined || a.answer === null ? "(no response)" : a.answer})],
      ["extracted answer", (a) => el("code", {text: fmt(a.extracted)})],
      ["score", (a) => a.correct ? badge("ok", "counted right") : badge("bad", "counted wrong"), (a) => " score " + fmt(a.score) + (a.correct ? "" : ": " + a.failure_class + (a.failure_detail ? " — " + a.failure_detail : ""))],
      ["finish reason", (a) => fmt(a.finish_reason)],
      ["tokens (output / reasoning / input)", (a) => fmt(a.output_tokens) + " / " + fmt(a.reasoning_tokens) + " / " + fmt(a.input_tokens)],
      ["latency", (a) => a.latency_s === undefined || a.latency_s === null ? "—" : a.latency_s.toFixed(2) + " s"],
      ["attempts", (a) => el("ul", {class: "attempts"}, (a.attempts || []).map((t) => el("li", {class: t.used ? "used" : ""}, el("code", {text: t.attempt_id}), " HTTP " + fmt(t.status) + (t.failure ? " (" + t.failure + ")" : "") + (t.used ? " — used" : "") + ", X-Request-Id ", el("code", {text: fmt(t.x_request_id)}), ", response ", el("code", {text: fmt(t.response_id)}), ", seed ", el("code", {text: t.seed === null || t.seed === undefined ? "—" : String(t.seed)}))))],
      ["repeats", (a) => (a.repeats || []).length ? a.repeats.map((r) => "#" + r.attempt + " " + r.failure_class + (r.correct ? " ✓" : " ✗") + (r.request_seed === undefined || r.request_seed === null ? "" : " (seed " + r.request_seed + ")")).join(", ") : "one attempt"],
      ["response sha256", (a) => el("code", {text: fmt(a.response_sha256)})],
    ];
    return el("table", {class: "fields"},
      el("thead", {}, el("tr", {}, el("th", {text: ""}), c.arms.map((a, i) => el("th", {text: (PAIRED ? (i === 0 ? "control: " : "under test: ") : "") + a.label})))),
      el("tbody", {}, rows.map(([name, f, g]) => el("tr", {class: "row-" + name.split(" ")[0]}, el("th", {text: name}), c.arms.map((a, i) => el("td", {}, f(a, i), g ? g(a, i) : null, name === "final answer" ? pointer(a.answer_cut) : null))))));
  }
  function verdictBox(s) {
    const cur = verdicts[s.key] || {verdict: "", note: ""};
    const note = el("textarea", {class: "note", rows: 2, placeholder: "why (kept with the verdict)"});
    note.value = cur.note || "";
    const save = (v) => {
      const verdict = v === undefined ? (verdicts[s.key] || {}).verdict : v;
      if (!verdict) return;
      verdicts[s.key] = {verdict: verdict, note: note.value, flip: s.flip};
      try { localStorage.setItem(storeKey, JSON.stringify(verdicts)); } catch (e) { /* private mode: kept in memory */ }
      renderQueue();
    };
    note.addEventListener("input", () => save());
    return el("fieldset", {class: "verdict"}, el("legend", {text: "Your verdict"}),
      VERDICTS.map(([v, text]) => {
        const input = el("input", {type: "radio", name: "verdict", value: v, onchange: () => save(v)});
        input.checked = cur.verdict === v;
        return el("label", {}, input, " " + text);
      }), note);
  }
  async function show(key, push) {
    if (!byKey.has(key)) return;
    state.key = key;
    for (const li of ui.queue.children) li.classList.toggle("current", li.dataset.key === key);
    writeHash();
    const s = byKey.get(key);
    const c = await card(key);
    if (state.key !== key) return;
    const body = clear(ui.card);
    put(body, el("h2", {}, PAIRED ? badge("flip-" + s.flip, FLIP_TEXT[s.flip]) : null, s.aa_flip ? badge("noise", "A/A flip: noise") : null, " ", el("span", {text: s.key}), el("span", {class: "dim", text: " stratum " + s.stratum + " · gold "}), el("code", {class: "gold", text: fmt(c.gold)})));
    put(body, fieldsTable(c));
    put(body, el("div", {class: "repro"},
      el("div", {}, "source id ", el("code", {text: s.source_id}), " · seed ", el("code", {text: DATA.seed}), " · manifest rank ", el("code", {text: c.rank}), " in stratum (rank key ", el("code", {text: c.rank_key.slice(0, 16) + "…"}), ")"),
      el("div", {}, "record sha256 ", el("code", {text: c.record_sha256})),
      c.arms.map((a) => el("div", {}, a.label + " response sha256 ", el("code", {text: fmt(a.response_sha256)}))),
      el("div", {}, "re-derive the sample: ", el("code", {class: "cmd", id: "verify-cmd", text: DATA.verify_command + " " + shellWord(s.key)}), " · replay the run's recorded responses and re-score them: ", el("code", {class: "cmd", text: DATA.replay_command}))));
    if (PAIRED) put(body, el("h3", {text: "Word diff of the final answers (control → under test)"}), wordDiff(c.arms[0].answer || "", c.arms[1].answer || ""));
    const chars = (c.prompt || []).reduce((n, m) => n + m.content.length, 0) + (c.question || "").length;
    const prompt = el("details", {class: "prompt"},
      el("summary", {}, el("strong", {text: "Prompt, as sent"}), " (" + (c.prompt || []).length + " message(s), " + fmt(chars) + " characters) sha256 ", el("code", {text: fmt(c.prompt_sha256)}), " ",
        c.prompt_verified === true ? badge("ok", "hash verified") : c.prompt_verified === false ? badge("bad", "hash does not match") : badge("dim", "prompt text not in this copy: EvalScope's predictions (evalscope/) hold it, the proxy only its sha256")),
      ...(c.prompt || []).map((m) => el("div", {class: "msg"}, el("div", {class: "role", text: m.role}), withEvidence(m))),
      c.question ? el("div", {class: "msg question"}, el("div", {class: "role", text: "the record's question, as materialised (index_map.json); EvalScope's template and any context come on top"}), el("pre", {text: c.question})) : null,
      pointer(c.prompt_cut));
    prompt.open = chars <= 1500;
    put(body, prompt);
    const traces = c.arms.map((a, i) => traceView(a, i));
    const tsearch = el("input", {type: "search", class: "trace-search", placeholder: "search inside the reasoning (regex)"});
    const tcount = el("span", {class: "dim"});
    tsearch.addEventListener("input", () => {
      let re = null;
      try { re = tsearch.value ? new RegExp(tsearch.value, "i") : null; } catch (e) { tcount.textContent = "not a regular expression"; return; }
      tcount.textContent = re ? traces.map((t, i) => c.arms[i].label + ": " + t.search(re)).join(", ") + " matches" : "";
      if (!re) traces.forEach((t) => t.search(null));
    });
    put(body, el("h3", {text: "Reasoning"}), el("div", {}, tsearch, " ", tcount), el("div", {class: "side"}, traces));
    if (PAIRED) put(body, verdictBox(s));
    if (push) {
      const li = ui.queue.querySelector('li.current');
      if (li) li.scrollIntoView({block: "nearest"});
    }
  }

  // ---------------------------------------------------------------- Markdown and verdict export
  function mdCell(text) { return String(text === null || text === undefined ? "—" : text).replace(/[\r\n\u2028\u2029]+/g, " ").replace(/[`|\\]/g, (c) => "\\" + c).slice(0, 80); }
  async function markdown() {
    const keys = DATA.samples.filter((s) => selected.has(s.key)).map((s) => s.key);
    const labels = DATA.arms.map((a) => a.label);
    const lines = ["| sample | flip | " + labels.map((l) => mdCell(l)).join(" | ") + " | verdict | note |", "|---|---|" + labels.map(() => "---|").join("") + "---|---|"];
    for (const key of keys) {
      const s = byKey.get(key), c = await card(key), v = verdicts[key];
      const arms = c.arms.map((a) => mdCell(a.failure_class + ", extracted " + (a.extracted ? a.extracted : "—")));
      lines.push("| " + mdCell(key) + " | " + (s.flip ? FLIP_TEXT[s.flip] : "—") + " | " + arms.join(" | ") + " | " + (v ? v.verdict.replace("_", " ") : "—") + " | " + mdCell(v ? v.note : "") + " |");
    }
    return lines.join("\n") + "\n";
  }
  async function copyMarkdown() {
    const text = await markdown();
    ui.mdOut.value = text;
    ui.mdOut.hidden = false;
    ui.mdOut.select();
    try { await navigator.clipboard.writeText(text); ui.mdNote.textContent = "copied " + selected.size + " sample(s)"; } catch (e) { ui.mdNote.textContent = "selected below: copy it (" + selected.size + " sample(s))"; }
  }
  function exportVerdicts() {
    const reviews = Object.entries(verdicts).filter(([key]) => byKey.has(key)).map(([key, v]) => {
      const s = byKey.get(key);
      const r = {benchmark: s.benchmark, source_id: s.source_id, verdict: v.verdict, note: v.note || ""};
      if (s.flip) r.flip = s.flip;
      return r;
    });
    const file = {schema_version: 1, manifest_sha256: DATA.manifest_sha256, label_test: PAIRED ? DATA.arms[1].label : DATA.arms[0].label, label_control: PAIRED ? DATA.arms[0].label : null, exported_at: new Date().toISOString().replace(/\.\d+Z$/, "+00:00"), reviews: reviews};
    const url = URL.createObjectURL(new Blob([JSON.stringify(file, null, 2) + "\n"], {type: "application/json"}));
    const a = el("a", {href: url, download: "reviews.json"});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  // ---------------------------------------------------------------- layout
  function options(values, all) { return [el("option", {value: "", text: all}), ...values.map(([v, t]) => el("option", {value: v, text: t}))]; }
  function uniq(f) { return [...new Set(DATA.samples.flatMap(f))].sort().map((v) => [v, v]); }
  function select(name, opts) {
    const s = el("select", {name: name, "aria-label": name}, opts);
    s.addEventListener("change", () => { state[name] = s.value; state.key = ""; applyFilters(); });
    return s;
  }
  // ---------------------------------------------------------------- sections above the card, each collapsed behind one line
  // one function per section: (summary text, body) or null when the page has nothing for it
  const CONTROL = () => DATA.arms[0].label, TEST = () => DATA.arms[DATA.arms.length - 1].label;
  function section(id, summary, ...body) {
    return el("details", {class: "section", id: id}, el("summary", {}, summary), el("div", {class: "section-body"}, body));
  }
  // a generated benchmark's length x placement grid: control → under test right of n, marked by its net change
  function placementGrid(b) {
    const cells = b.placement_grid;
    const places = [...new Set(cells.map((c) => c.placement))];
    const lengths = [...new Set(cells.map((c) => c.length))].sort((x, y) => x - y);
    const at = {};
    for (const c of cells) at[c.length + "/" + c.placement] = c;
    const cell = (length, place) => {
      const c = at[length + "/" + place];
      if (!c) return el("td", {class: "dim", text: "–"});
      const net = c.a_only - c.b_only;
      return el("td", {class: net < 0 ? "grid-lost" : net > 0 ? "grid-gained" : null, title: c.b_correct + " of " + c.n_pairs + " right in " + CONTROL() + ", " + c.a_correct + " in " + TEST()},
        c.b_correct + " → " + c.a_correct + " of " + c.n_pairs, c.b_only ? el("span", {class: "bad-text", text: " ▼" + c.b_only}) : null, c.a_only ? el("span", {class: "ok-text", text: " ▲" + c.a_only}) : null);
    };
    return el("div", {class: "grid"}, el("h4", {text: b.block + ": by context length and where the evidence sat"}),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {text: "length"}), places.map((p) => el("th", {text: p})))),
        el("tbody", {}, lengths.map((n) => el("tr", {}, el("td", {text: fmt(n)}), places.map((p) => cell(n, p)))))));
  }
  function gridLegend() {
    return el("p", {class: "legend"}, "Each cell: right in ", el("strong", {text: CONTROL()}), " → right in ", el("strong", {text: TEST()}), " of n. ",
      el("span", {class: "bad-text", text: "▼k"}), " samples the arm under test lost, ", el("span", {class: "ok-text", text: "▲k"}), " samples it gained; ",
      el("span", {class: "swatch grid-lost", text: "red"}), " a net loss, ", el("span", {class: "swatch grid-gained", text: "green"}), " a net gain, unmarked: no net change (0 → 0: neither arm right).");
  }
  function statsSection() {
    if (!PAIRED) {
      const per = {};
      for (const s of DATA.samples) { const b = per[s.benchmark] || (per[s.benchmark] = [0, 0]); b[0] += s.correct[0] ? 1 : 0; b[1]++; }
      const text = Object.entries(per).map(([b, [k, n]]) => b + " " + k + "/" + n).join(" · ");
      return section("section-stats", "Scores: " + text, el("ul", {}, Object.entries(per).map(([b, [k, n]]) => el("li", {text: b + ": " + k + " of " + n + " counted right"}))));
    }
    const flips = DATA.stats.reduce((n, b) => b.block === "all" ? n : n + b.regressions + b.improvements, 0);
    const table = el("table", {class: "stats-table"},
      el("thead", {}, el("tr", {}, ["block", "n", "lost", "gained", "p", "descriptive interval (pts)", "MDE (pts)", "A/A flips", "verdict (deciding interval)"].map((h) => el("th", {text: h})))),
      el("tbody", {}, DATA.stats.map((b) => el("tr", {title: b.line}, el("td", {text: b.block}), el("td", {text: fmt(b.n_pairs)}), el("td", {text: fmt(b.regressions)}), el("td", {text: fmt(b.improvements)}), el("td", {text: b.p_value === null ? "—" : b.p_value.toPrecision(2)}), el("td", {text: b.ci_low_pts === null ? "—" : "[" + b.ci_low_pts.toFixed(1) + ", " + b.ci_high_pts.toFixed(1) + "]", title: b.ci_label}), el("td", {text: b.mde_pts === null ? "none" : b.mde_pts.toFixed(1)}), el("td", {text: fmt(b.aa_flips)}), el("td", {text: b.verdict ? b.verdict : "—"})))));
    const lines = DATA.stats.map((b) => [b, [b.non_inferiority ? "non-inferiority: " + b.non_inferiority : null, b.dropped, b.operating, b.design ? "measured beside designed: " + b.design : null, b.aa].filter(Boolean)]).filter(([, l]) => l.length);
    return section("section-stats", "Paired statistics: " + DATA.stats.length + " block(s), " + flips + " flip(s); lost and gained by the arm under test (" + TEST() + ") against the control (" + CONTROL() + ")",
      el("p", {class: "legend"}, "lost: right in the control, wrong under test; gained: the reverse; interval: under test − control."), table,
      lines.map(([b, l]) => el("p", {class: "dim"}, el("strong", {text: b.block + ": "}), l.join(" · "))));
  }
  function lengthSection() {
    const grids = PAIRED ? DATA.stats.filter((b) => b.placement_grid && b.placement_grid.length) : [];
    if (!grids.length) return null;
    const lost = grids.reduce((n, b) => n + b.placement_grid.filter((c) => c.a_only < c.b_only).length, 0);
    return section("section-length", "By context length and placement: " + grids.map((b) => b.block).join(", ") + " (" + lost + " cell(s) with a net loss)", gridLegend(), grids.map(placementGrid));
  }
  function strataSection() {
    if (!PAIRED) return null;
    const counts = {};
    for (const s of DATA.samples) {
      const k = s.benchmark + " / " + s.stratum;
      const c = counts[k] || (counts[k] = {regression: 0, improvement: 0, answers_differ: 0, same: 0});
      c[s.flip]++;
    }
    return section("section-strata", "Flips by benchmark and stratum (" + Object.keys(counts).length + " strata)", el("table", {},
      el("thead", {}, el("tr", {}, ["benchmark / stratum", "regressions", "improvements", "answers differ", "same"].map((h) => el("th", {text: h})))),
      el("tbody", {}, Object.entries(counts).map(([k, c]) => el("tr", {}, el("td", {text: k}), el("td", {text: c.regression}), el("td", {text: c.improvement}), el("td", {text: c.answers_differ}), el("td", {text: c.same}))))));
  }
  function numericsSection() {
    const view = DATA.numerics;
    if (!view) return null;
    const lp = (v) => (v === null || v === undefined ? "—" : v.toFixed(3));
    const div = (v) => (v === null || v === undefined ? "—" : v === 0 ? "0" : v.toPrecision(3));
    const prompt = (p) => el("details", {class: "numerics-prompt"},
      el("summary", {text: p.id + " · " + fmt(p.prompt_tokens) + " prompt tokens · " + p.placement + " · A/B " + div(p.ab) + " vs A/A " + div(p.aa) + (p.first_divergence === null ? " · greedy tokens identical" : " · first differing token at step " + p.first_divergence)}),
      el("p", {class: "dim"}, "control: ", el("code", {text: p.text_control === null ? "—" : p.text_control}), " · under test: ", el("code", {text: p.text_test === null ? "—" : p.text_test})),
      el("table", {}, el("thead", {}, el("tr", {}, ["first-step token", "log p control", "log p under test", "log p A/A"].map((h) => el("th", {text: h})))),
        el("tbody", {}, p.top.map((r) => el("tr", {}, el("td", {}, el("code", {text: JSON.stringify(r.token)})), el("td", {text: lp(r.control)}), el("td", {text: lp(r.test)}), el("td", {text: lp(r.aa)}))))));
    return section("section-numerics", "Numerics: " + view.sentence,
      el("p", {class: "legend", text: "The " + view.prompts.length + " prompts whose next-token distribution the arm under test moved most (" + view.primary + "), the first step's top-k side by side: control, under test, A/A."}),
      view.prompts.map(prompt));
  }
  // the sections, in order; a new one is one function added here
  const SECTIONS = [statsSection, lengthSection, strataSection, numericsSection];
  const ui = {};
  function build() {
    ui.qError = el("span", {class: "bad-text"});
    ui.q = el("input", {type: "search", name: "q", placeholder: "regex over prompts and answers  ( / )", "aria-label": "regex"});
    ui.q.addEventListener("input", () => { state.q = ui.q.value; applyFilters(); });
    ui.count = el("span", {class: "dim"});
    ui.queue = el("ul", {class: "queue", id: "queue"});
    ui.card = el("main", {class: "card", id: "card"});
    ui.mdOut = el("textarea", {id: "markdown", class: "markdown", rows: 6, readonly: true});
    ui.mdOut.hidden = true;
    ui.mdNote = el("span", {class: "dim"});
    ui.selects = {
      bench: select("bench", options(uniq((s) => [s.benchmark]), "every benchmark")),
      stratum: select("stratum", options(uniq((s) => [s.stratum]), "every stratum")),
      fail: select("fail", options(uniq((s) => s.failure), "every failure class")),
      flip: PAIRED ? select("flip", options(Object.entries(FLIP_TEXT), "every flip type")) : null,
      len: select("len", options(LENGTHS.slice(1), "any length")),
    };
    const header = el("header", {},
      el("h1", {text: DATA.title}),
      el("p", {class: "dim"}, DATA.arms.map((a, i) => (PAIRED ? (i === 0 ? "control " : "under test ") : "run ") + a.label + " (" + a.run_dir + ")").join(" · ") + " · " + DATA.samples.length + " samples · " + DATA.tier),
      el("div", {class: "sections"}, SECTIONS.map((f) => f()).filter(Boolean)),
      el("div", {class: "actions"},
        el("button", {type: "button", id: "copy-md", text: "Copy the selected flips as Markdown", onclick: copyMarkdown}),
        PAIRED ? el("button", {type: "button", id: "export", text: "Export verdicts (reviews.json)", onclick: exportVerdicts}) : null,
        el("span", {class: "dim keys", text: "keys: j / k next / previous, x select, / search"}),
        ui.mdNote),
      ui.mdOut);
    const side = el("aside", {class: "side-panel"},
      el("div", {class: "filters"}, Object.values(ui.selects).filter(Boolean), ui.q, ui.qError, ui.count),
      ui.queue);
    document.body.append(header, el("div", {class: "layout"}, side, ui.card));
  }
  function syncControls() {
    for (const [name, s] of Object.entries(ui.selects)) if (s) s.value = state[name];
    ui.q.value = state.q;
  }
  document.addEventListener("keydown", (ev) => {
    const t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) { if (ev.key === "Escape") t.blur(); return; }
    if (ev.key === "j" || ev.key === "ArrowDown") { ev.preventDefault(); move(1); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { ev.preventDefault(); move(-1); }
    else if (ev.key === "/") { ev.preventDefault(); ui.q.focus(); }
    else if (ev.key === "x" && state.key) { if (selected.has(state.key)) selected.delete(state.key); else selected.add(state.key); renderQueue(); }
  });
  window.addEventListener("hashchange", () => { readHash(); syncControls(); applyFilters(); });
  build();
  readHash();
  syncControls();
  applyFilters().then(() => { document.body.dataset.ready = "1"; });
})();
