(function () {
  "use strict";
  // The sample browser of a jurist report. The rows come from a JSON data block; model
  // text is only ever set with textContent. The filter state lives in the URL hash
  // (#status=failed&verdict=2&q=word&page=3&item=17), so a view can be linked.
  var byId = function (id) { return document.getElementById(id); };
  var meta = JSON.parse(byId("report-meta").textContent);
  var rows = JSON.parse(byId("report-rows").textContent);
  var C = {};
  meta.columns.forEach(function (name, i) { C[name] = i; });
  var position = new Map();
  rows.forEach(function (r, i) { position.set(String(r[C.name]), i); });
  var KEYS = ["status", "smin", "smax", "verdict", "agree", "sort", "q", "page", "item"];
  var CONTROLS = { status: "f-status", smin: "f-smin", smax: "f-smax", verdict: "f-verdict",
    agree: "f-agree", sort: "f-sort", q: "f-q" };
  var state = {};
  var hay = null;
  var labelled = meta.labels !== null;
  // a page may rename the browser's headings (the side-by-side page of two runs does)
  var H = Object.assign({ score: "score", verdict: "verdict", response: "judge response",
    difference: "|judge \u2212 label|", other: "Other outcome fields",
    raw: "Judge's raw answer" }, meta.headers || {});

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function short(text, n) {
    if (text === null || text === undefined) { return ""; }
    text = String(text);
    return text.length > n ? text.slice(0, n) + "\u2026" : text;
  }
  function num(v) {
    if (v === undefined || v === null || v === "") { return null; }
    var n = Number(v);
    return isNaN(n) ? null : n;
  }
  function fmt(v) { return v === null || v === undefined ? "-" : Number(v.toFixed(4)).toString(); }

  function readHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    state = {};
    KEYS.forEach(function (k) { var v = p.get(k); if (v) { state[k] = v; } });
    Object.keys(CONTROLS).forEach(function (k) { byId(CONTROLS[k]).value = state[k] || ""; });
  }
  function writeHash() {
    var p = new URLSearchParams();
    KEYS.forEach(function (k) { if (state[k]) { p.set(k, state[k]); } });
    var h = p.toString();
    try {
      history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
    } catch (e) {
      location.hash = h;
    }
  }

  function show(v) { return typeof v === "string" ? v : JSON.stringify(v); }
  // text of only whitespace is shown as a marker, never as a tall blank cell
  function visible(v) {
    if (typeof v !== "string" || v === "" || v.trim() !== "") { return v; }
    return "[blank: " + v.length + " whitespace character" + (v.length === 1 ? "" : "s") + "]";
  }
  function input(r) {
    var fields = r[C.fields];
    return Object.keys(fields).map(function (k) { return k + ": " + show(visible(fields[k])); }).join("\n");
  }
  function prompt(r) {
    // fields the prompt holds whole are stored once: NUL name NUL marks their place
    if (r[C.prompt] === null || !r[C.in_prompt].length) { return r[C.prompt]; }
    var fields = r[C.fields];
    return r[C.prompt].split("\u0000").map(function (part, i) {
      return i % 2 ? show(fields[part]) : part;
    }).join("");
  }
  function searchText(r) {
    return [input(r), r[C.response], r[C.prompt], r[C.error], r[C.explanation],
      r[C.verdict], r[C.label], meta.search_other ? JSON.stringify(r[C.other]) : ""]
      .join("\n").toLowerCase();
  }
  function matches() {
    var out = [];
    var smin = num(state.smin), smax = num(state.smax), tol = meta.tolerance || 0;
    var q = (state.q || "").toLowerCase();
    if (q && hay === null) { hay = rows.map(searchText); }
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], s = r[C.score], d = r[C.disagreement];
      if (state.status === "failed" && s !== null) { continue; }
      if (state.status === "scored" && s === null) { continue; }
      if (smin !== null && (s === null || s < smin)) { continue; }
      if (smax !== null && (s === null || s > smax)) { continue; }
      if (state.verdict) {
        if (state.verdict === meta.failed ? s !== null : r[C.verdict] !== state.verdict) { continue; }
      }
      if (state.agree === "agree" && (d === null || d > tol)) { continue; }
      if (state.agree === "disagree" && (d === null || d <= tol)) { continue; }
      if (q && hay[i].indexOf(q) < 0) { continue; }
      out.push(i);
    }
    var key = { score: C.score, "-score": C.score, "-dis": C.disagreement }[state.sort];
    if (key !== undefined) {
      var sign = state.sort.charAt(0) === "-" ? -1 : 1;
      out.sort(function (a, b) {
        var x = rows[a][key], y = rows[b][key];
        if (x === null || y === null) { return (x === null) - (y === null) || a - b; }
        return sign * (x - y) || a - b;
      });
    }
    return out;
  }

  function header() {
    var names = ["item", H.score, H.verdict];
    if (labelled) { names.push(meta.labels, H.difference); }
    names.push("input", H.response, "error");
    var thead = el("thead"), tr = el("tr");
    names.forEach(function (n) { tr.appendChild(el("th", n)); });
    thead.appendChild(tr);
    return thead;
  }
  function rowElement(r) {
    var tr = el("tr");
    tr.setAttribute("data-idx", String(r[C.idx]));
    tr.setAttribute("data-name", String(r[C.name]));
    if (r[C.score] === null) { tr.className = "failed"; }
    var open = el("button", String(r[C.name]), "open");
    open.type = "button";
    open.title = "open this item";
    var first = el("td");
    first.appendChild(open);
    tr.appendChild(first);
    tr.appendChild(el("td", fmt(r[C.score]), "num"));
    tr.appendChild(el("td", r[C.verdict] === null ? "-" : r[C.verdict]));
    if (labelled) {
      tr.appendChild(el("td", r[C.label] === null ? "-" : short(r[C.label], 40)));
      tr.appendChild(el("td", fmt(r[C.disagreement]), "num"));
    }
    tr.appendChild(el("td", short(input(r), 160), "text"));
    tr.appendChild(el("td", short(visible(r[C.response]), 160), "text"));
    tr.appendChild(el("td", short(r[C.error], 120), "text"));
    return tr;
  }

  function section(box, title, text) {
    if (text === null || text === undefined || text === "") { return; }
    box.appendChild(el("h4", title));
    box.appendChild(el("pre", text));
  }
  function renderDetail() {
    var box = byId("item-detail");
    box.textContent = "";
    if (!state.item) { box.hidden = true; return; }
    box.hidden = false;
    var close = el("button", "close", "close");
    close.type = "button";
    close.id = "item-close";
    box.appendChild(close);
    var i = position.get(String(state.item));
    if (i === undefined) { box.appendChild(el("p", "This run has no item " + state.item + ".")); return; }
    var r = rows[i], u = r[C.usage];
    box.appendChild(el("h3", "Item " + r[C.name]));
    var facts = [[H.score, fmt(r[C.score])], [H.verdict, r[C.verdict] === null ? "-" : r[C.verdict]]];
    if (labelled) {
      facts.push([meta.labels, r[C.label] === null ? "-" : r[C.label]]);
      facts.push([H.difference + " (" + meta.compared + ")", fmt(r[C.disagreement])]);
    }
    facts.push(["attempts", r[C.attempts] === null ? "-" : r[C.attempts]]);
    facts.push(["tokens (prompt / completion), calls", u[0] + " / " + u[1] + ", " + u[2]]);
    if (u[3]) { facts.push(["latency", fmt(u[3]) + " s"]); }
    if (u[4]) {
      facts.push(["reasoning tokens", u[4] + " of " + u[1] + " completion tokens" +
        (u[5] === null || u[5] === undefined ? "" : ", $" + Number(u[5]).toFixed(6))]);
    }
    if (r[C.thinking_note]) { facts.push(["cut in its thinking", r[C.thinking_note]]); }
    var dl = el("dl");
    facts.forEach(function (f) { dl.appendChild(el("dt", f[0])); dl.appendChild(el("dd", f[1])); });
    box.appendChild(dl);
    section(box, "Error", r[C.error]);
    if (r[C.prompt] !== null) {
      section(box, "Judge prompt: system message", meta.system);
      section(box, "Judge prompt: item message", prompt(r));
    }
    section(box, H.raw, visible(r[C.response]));
    section(box, "Explanation", r[C.explanation]);
    if (r[C.reasoning]) {  // the thinking trace, folded: long, and read only when wanted
      var fold = el("details", null, "thinking");
      fold.appendChild(el("summary", "Thinking (" + r[C.reasoning].length + " characters)"));
      fold.appendChild(el("pre", r[C.reasoning]));
      box.appendChild(fold);
    }
    var fields = {}, inPrompt = r[C.in_prompt];
    Object.keys(r[C.fields]).forEach(function (k) {
      if (inPrompt.indexOf(k) < 0) { fields[k] = r[C.fields][k]; }
    });
    if (Object.keys(fields).length) { section(box, "Input fields", JSON.stringify(fields, null, 2)); }
    if (inPrompt.length) {
      box.appendChild(el("p", "Shown in the judge prompt above: " + inPrompt.join(", ") + ".", "muted"));
    }
    if (Object.keys(r[C.other]).length) {
      section(box, H.other, JSON.stringify(r[C.other], null, 2));
    }
  }

  function render() {
    var list = matches();
    var size = meta.page_size;
    var pages = Math.max(1, Math.ceil(list.length / size));
    var page = Math.min(Math.max(1, parseInt(state.page || "1", 10) || 1), pages);
    var table = byId("sample-table");
    var tbody = el("tbody");
    list.slice((page - 1) * size, page * size).forEach(function (i) {
      tbody.appendChild(rowElement(rows[i]));
    });
    table.textContent = "";
    table.appendChild(header());
    table.appendChild(tbody);
    byId("p-info").textContent = "page " + page + " of " + pages;
    byId("p-prev").disabled = page <= 1;
    byId("p-next").disabled = page >= pages;
    byId("f-count").textContent = list.length + " of " + rows.length + " items";
    document.body.setAttribute("data-shown", String(list.length));
    renderDetail();
  }
  function changed(key, value) {
    if (value) { state[key] = value; } else { delete state[key]; }
    if (key !== "page" && key !== "item") { delete state.page; }
    writeHash();
    if (key === "item") { renderDetail(); } else { render(); }
  }

  function start() {
    var verdicts = byId("f-verdict");
    meta.verdicts.forEach(function (v) { var o = el("option", v); o.value = v; verdicts.appendChild(o); });
    if (!labelled) {
      byId("f-agree-label").hidden = true;
      byId("f-sort").querySelector("option[value='-dis']").remove();
    }
    var timer = null;
    Object.keys(CONTROLS).forEach(function (k) {
      var c = byId(CONTROLS[k]);
      if (k === "q") {
        c.addEventListener("input", function () {
          clearTimeout(timer);
          timer = setTimeout(function () { changed("q", c.value); }, 200);
        });
      } else {
        c.addEventListener("change", function () { changed(k, c.value); });
      }
    });
    byId("filters").addEventListener("submit", function (e) { e.preventDefault(); changed("q", byId("f-q").value); });
    byId("f-reset").addEventListener("click", function () { location.hash = ""; });
    byId("p-prev").addEventListener("click", function () { changed("page", String(num(state.page || 1) - 1)); });
    byId("p-next").addEventListener("click", function () { changed("page", String(num(state.page || 1) + 1)); });
    byId("sample-table").addEventListener("click", function (e) {
      var tr = e.target.closest("tr[data-idx]");
      if (tr) {
        changed("item", tr.getAttribute("data-name"));
        byId("item-detail").scrollIntoView();
      }
    });
    byId("item-detail").addEventListener("click", function (e) {
      if (e.target.id === "item-close") { changed("item", ""); }
    });
    window.addEventListener("hashchange", function () { readHash(); render(); });
    byId("filters").hidden = false;
    byId("pager").hidden = false;
    readHash();
    render();
    if (Object.keys(state).length) {  // a linked view: show the browser, not the top of the page
      byId(state.item ? "item-detail" : "samples").scrollIntoView();
    }
    // when the first page was on screen, in ms since the navigation began (benchmarks read it)
    document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  }
  start();
}());
