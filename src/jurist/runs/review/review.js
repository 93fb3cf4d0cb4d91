(function () {
  "use strict";
  // Every piece of item, model or annotator text reaches the page through textContent or
  // an attribute set by the DOM (never innerHTML): it is only ever text.
  var byId = function (id) { return document.getElementById(id); };
  var read = function (id) { return JSON.parse(byId(id).textContent); };
  var meta = read("review-meta"), items = read("review-items");
  var verdicts = byId("review-verdicts") ? read("review-verdicts") : {};
  var server = meta.mode === "server";
  var KEY = "jurist-review:" + meta.run_id;
  var position = new Map(), asked = {};
  items.forEach(function (it, i) { position.set(it.idx, i); });
  var st = {
    pos: 0, annotator: "", offset: 0, labels: new Map(), pending: [], given: [],
    agreement: [], counts: {}, sending: false, failures: 0, problem: "", saved: 0
  };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function key(item, who) { return item + "\u0000" + who; }
  function store(name, value) {
    try { localStorage.setItem(KEY + ":" + name, JSON.stringify(value)); } catch (e) { /* private mode */ }
  }
  function load(name, fallback) {
    try { var v = localStorage.getItem(KEY + ":" + name); return v === null ? fallback : JSON.parse(v); } catch (e) { return fallback; }
  }
  function apply(line) { st.labels.set(key(line.item, line.annotator), line); }
  function mine(item) {
    for (var i = st.pending.length - 1; i >= 0; i--) {
      if (st.pending[i].item === item) { return st.pending[i]; }
    }
    return st.labels.get(key(item, st.annotator));
  }
  function labelled(item) { var l = mine(item); return !!(l && l.label !== null); }

  // -- how an item is shown -------------------------------------------------------------
  var SHA = /^sha256:([0-9a-f]{64})$/;
  function image(ref) {
    var m = SHA.exec(ref), src = null;
    if (m) { src = server ? "image/" + m[1] + "?token=" + encodeURIComponent(meta.token) : (meta.images || {})[m[1]]; }
    else if (/^data:image\/[a-z0-9.+-]+;base64,/i.test(ref)) { src = ref; }
    if (!src) { return el("pre", "[image " + ref + "]", "text"); }
    var img = el("img", null, "item-image");
    img.src = src; img.alt = "image " + ref.slice(0, 20);
    return img;
  }
  function isMessages(v) {
    return Array.isArray(v) && v.length > 0 && v.every(function (m) {
      return m && typeof m === "object" && !Array.isArray(m) && typeof m.role === "string";
    });
  }
  function blank(s) { return s && !s.trim() ? "[blank: " + s.length + " whitespace characters]" : s; }
  function part(p) {
    if (typeof p === "string") { return el("pre", blank(p), "text"); }
    if (p && p.type === "text") { return el("pre", blank(String(p.text)), "text"); }
    if (p && p.type === "image_url") { var u = p.image_url; return image(String(u && typeof u === "object" ? u.url : u)); }
    return el("pre", JSON.stringify(p, null, 2), "text");
  }
  function value(v) {
    if (typeof v === "string") {
      if (SHA.test(v)) { return image(v); }
      var t = v.trim();
      if (t.charAt(0) === "[" && t.charAt(t.length - 1) === "]") {
        try { var parsed = JSON.parse(t); if (isMessages(parsed)) { return value(parsed); } } catch (e) { /* text */ }
      }
      return el("pre", blank(v), "text");
    }
    if (isMessages(v)) {
      var box = el("div", null, "conversation");
      v.forEach(function (m) {
        var d = el("div", null, "msg role-" + m.role.replace(/[^a-z]/gi, ""));
        d.appendChild(el("div", m.role, "role"));
        (Array.isArray(m.content) ? m.content : [m.content === undefined ? "" : m.content]).forEach(function (p) { d.appendChild(part(p)); });
        box.appendChild(d);
      });
      return box;
    }
    if (Array.isArray(v) && v.length > 0 && v.every(function (x) { return typeof x === "string" && SHA.test(x); })) {
      var imgs = el("div");
      v.forEach(function (x) { imgs.appendChild(image(x)); });
      return imgs;
    }
    return el("pre", v === null ? "null" : JSON.stringify(v, null, 2), "text");
  }
  function field(name, v) {
    var d = el("div", null, "field");
    d.appendChild(el("div", name, "key"));
    d.appendChild(value(v));
    return d;
  }
  function pairKeys(fields) {
    return Object.keys(fields).filter(function (k) {
      return /_a$/.test(k) && Object.prototype.hasOwnProperty.call(fields, k.slice(0, -2) + "_b");
    });
  }
  function renderItem(it) {
    var box = byId("item");
    box.textContent = "";
    var pairs = pairKeys(it.fields), inPair = {};
    pairs.forEach(function (k) { inPair[k] = true; inPair[k.slice(0, -2) + "_b"] = true; });
    Object.keys(it.fields).forEach(function (k) { if (!inPair[k]) { box.appendChild(field(k, it.fields[k])); } });
    if (pairs.length) {
      var grid = el("div", null, "pair");
      ["a", "b"].forEach(function (side) {
        var col = el("div", null, "side-" + side);
        col.appendChild(el("h3", side.toUpperCase()));
        pairs.forEach(function (k) { var name = k.slice(0, -2) + "_" + side; col.appendChild(field(name, it.fields[name])); });
        grid.appendChild(col);
      });
      box.appendChild(grid);
    }
    var reason = byId("reason");
    reason.hidden = !it.reason;
    reason.textContent = it.reason ? "Left for people: " + it.reason : "";
  }
  function renderRubric() {
    if (!meta.rubric) { return; }
    byId("rubric-box").hidden = false;
    var box = byId("rubric"), criteria = Array.isArray(meta.rubric) ? meta.rubric : meta.rubric.criteria;
    if (!Array.isArray(criteria)) { box.appendChild(value(meta.rubric)); return; }
    var list = el("ol");
    criteria.forEach(function (c) {
      var li = el("li");
      li.appendChild(el("strong", c && c.name !== undefined ? c.name : ""));
      Object.keys(c || {}).forEach(function (k) {
        if (k === "name") { return; }
        var v = c[k];
        li.appendChild(el("div", k + ": " + (typeof v === "string" ? v : JSON.stringify(v)), "criterion"));
      });
      list.appendChild(li);
    });
    box.appendChild(list);
  }

  // -- the side panel -------------------------------------------------------------------
  function renderScale(it) {
    var box = byId("scale"), my = mine(it.idx);
    box.textContent = "";
    meta.scale.points.forEach(function (p, i) {
      var b = el("button", null, my && my.label === p ? "chosen" : "");
      b.type = "button";
      b.dataset.point = String(i);
      b.appendChild(el("kbd", i < 9 ? String(i + 1) : "0"));
      b.appendChild(document.createTextNode(" " + meta.scale.names[i]));
      box.appendChild(b);
    });
    byId("mine").textContent = !st.annotator ? "Type your name above first (it is saved with each label)."
      : my && my.label !== null ? "Your label: " + meta.scale.names[meta.scale.points.indexOf(my.label)] + (my.note ? " (with a note)" : "")
      : "Not labelled by you yet.";
  }
  function renderVerdict(it) {
    var box = byId("verdict"), v = verdicts[it.idx];
    box.textContent = "";
    var open = meta.show_verdict || labelled(it.idx);
    box.className = open ? "" : "hidden-verdict";
    if (!open) { box.textContent = "Hidden until you give your label (so it cannot sway it)."; return; }
    if (!v) {
      var waiting = st.pending.some(function (l) { return l.item === it.idx; });
      box.textContent = waiting ? "Shown once your label is saved." : "Loading...";
      if (server && !waiting && !asked[it.idx]) { asked[it.idx] = true; fetchVerdict(it.idx); }
      return;
    }
    var dl = el("dl");
    [["verdict", v.verdict], ["score", v.score], ["error", v.error]].forEach(function (f) {
      if (f[1] !== null && f[1] !== undefined) { dl.appendChild(el("dt", f[0])); dl.appendChild(el("dd", f[1])); }
    });
    box.appendChild(dl);
    if (v.response) { box.appendChild(el("div", "judge's answer", "key")); box.appendChild(el("pre", v.response, "text")); }
    if (v.explanation) { box.appendChild(el("div", "explanation", "key")); box.appendChild(el("pre", v.explanation, "text")); }
    if (v.tiers) { box.appendChild(el("div", "tiers", "key")); box.appendChild(value(v.tiers)); }
  }
  function renderOthers(it) {
    var box = byId("others"), others = [];
    st.labels.forEach(function (l) { if (l.item === it.idx && l.annotator !== st.annotator && l.label !== null) { others.push(l); } });
    box.textContent = "";
    if (!others.length) { box.textContent = "No one else has labelled this item."; }
    else if (!labelled(it.idx) && !meta.show_verdict) { box.textContent = others.length + " other annotator(s) labelled this item; theirs show once you give yours."; }
    else {
      var ul = el("ul");
      others.forEach(function (l) { ul.appendChild(el("li", l.annotator + ": " + meta.scale.names[meta.scale.points.indexOf(l.label)] + (l.note ? " (note: " + l.note + ")" : ""))); });
      box.appendChild(ul);
    }
    var table = byId("agreement");
    table.textContent = "";
    var counts = Object.keys(st.counts);
    if (counts.length) { table.appendChild(el("p", counts.map(function (a) { return a + ": " + st.counts[a]; }).join(", "), "muted")); }
    if (!st.agreement.length) { return; }
    var t = el("table"), head = el("tr");
    ["annotators", "shared items", "same label", "Cohen's kappa", "Krippendorff's alpha"].forEach(function (h) { head.appendChild(el("th", h)); });
    t.appendChild(head);
    st.agreement.forEach(function (a) {
      var tr = el("tr");
      [a.a + " & " + a.b, a.n, a.accuracy, a.cohen_kappa, a.krippendorff_alpha].forEach(function (v) {
        tr.appendChild(el("td", typeof v === "number" ? Number(v.toFixed(3)).toString() : v === null || v === undefined ? "-" : v));
      });
      t.appendChild(tr);
    });
    t.id = "agreement-table";
    table.appendChild(t);
    if (st.agreementNote) { table.appendChild(el("p", st.agreementNote, "muted")); }
  }
  function render() {
    if (!items.length) { byId("item-head").textContent = "This run has no items to label."; return; }
    var it = items[st.pos];
    var done = items.filter(function (x) { return labelled(x.idx); }).length;
    byId("item-head").textContent = "item " + it.name + " (" + (st.pos + 1) + " of " + items.length + ")";
    byId("progress").textContent = st.annotator ? "you: " + done + " of " + items.length + " labelled" : "";
    document.body.dataset.item = String(it.idx);
    renderItem(it); renderScale(it); renderVerdict(it); renderOthers(it);
    var s = byId("status");
    if (st.problem) { s.textContent = st.problem; s.className = "bad"; }
    else if (server && st.pending.length) { s.textContent = st.pending.length + " label(s) being saved"; s.className = ""; }
    else if (server) { s.textContent = "all labels saved"; s.className = "ok"; }
    else { s.textContent = "labels kept in this browser: download them to hand in"; s.className = ""; }
    var dl = byId("download");
    dl.hidden = server;
    if (!server) { dl.textContent = "Download labels (" + load("lines", []).length + " lines)"; }
  }

  // -- giving labels --------------------------------------------------------------------
  function give(point, note) {
    var it = items[st.pos];
    if (!st.annotator) { byId("annotator").focus(); render(); return; }
    var text = byId("note").value.trim();
    var line = { item: it.idx, item_hash: it.hash, label: point, annotator: st.annotator,
      at: new Date().toISOString(), note: note === undefined ? (text || null) : note };
    if (it.p) { line.inclusion_probability = it.p; }
    if (point !== null) { st.given.push(it.idx); }
    send(line);
  }
  function send(line) {
    if (server) {
      st.pending.push(line);
      store("pending", st.pending);
      flush();
    } else {
      apply(line);
      var all = load("lines", []);
      all.push(line);
      store("lines", all);
    }
    render();
  }
  function request(method, path, body) {
    var sep = path.indexOf("?") < 0 ? "?" : "&";
    return fetch(path + sep + "token=" + encodeURIComponent(meta.token), {
      method: method, cache: "no-store",
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined
    });
  }
  function flush() {
    if (st.sending || !st.pending.length) { return; }
    st.sending = true;
    var line = st.pending[0];
    request("POST", "api/label", line).then(function (r) {
      return r.json().then(function (body) { return { status: r.status, body: body }; });
    }).then(function (res) {
      st.sending = false;
      if (res.status === 200) {
        st.pending.shift(); st.failures = 0; st.problem = ""; st.saved += 1;
        apply(line);
        if (res.body.verdict) { verdicts[line.item] = res.body.verdict; }
      } else if (res.status >= 400 && res.status < 500) {
        st.pending.shift();
        st.problem = "label not saved: " + (res.body.error || res.status);
      } else { throw new Error(res.body.error || "server error " + res.status); }
      store("pending", st.pending);
      render();
      flush();
    }).catch(function () {
      st.sending = false;
      st.failures += 1;
      st.problem = "cannot reach the review server: " + st.pending.length + " label(s) wait here and are sent when it is back";
      render();
      setTimeout(flush, Math.min(5000, 250 * st.failures));
    });
  }
  function undo() {
    var item = st.given.length ? st.given.pop() : items[st.pos].idx;
    if (!labelled(item)) { return; }
    st.pos = position.get(item);
    byId("note").value = "";
    give(null, null);
  }
  function fetchVerdict(item) {
    request("GET", "api/verdict?item=" + item + "&annotator=" + encodeURIComponent(st.annotator)).then(function (r) { return r.json(); })
      .then(function (body) { if (body.verdict) { verdicts[item] = body.verdict; render(); } else { delete asked[item]; } })
      .catch(function () { delete asked[item]; });
  }
  function poll() {
    request("GET", "api/state?since=" + st.offset).then(function (r) { return r.json(); }).then(function (body) {
      body.lines.forEach(apply);
      st.offset = body.offset; st.agreement = body.agreement; st.counts = body.annotators;
      st.agreementNote = body.agreement_note || "";
      if (st.problem && !st.pending.length) { st.problem = ""; }
      render();
    }).catch(function () { /* the status line says so when a label cannot be sent */ })
      .then(function () { setTimeout(poll, 1500); });
  }
  function move(to) { st.pos = Math.max(0, Math.min(items.length - 1, to)); byId("note").value = (mine(items[st.pos].idx) || {}).note || ""; render(); }
  function nextOpen() {
    for (var k = 1; k <= items.length; k++) {
      var i = (st.pos + k) % items.length;
      if (!labelled(items[i].idx)) { move(i); return; }
    }
  }
  function setName(name) {
    st.annotator = name.trim().slice(0, 100);
    try { localStorage.setItem("jurist-review-annotator", st.annotator); } catch (e) { /* private mode */ }
    render();
  }
  function download() {
    var text = load("lines", []).map(function (l) { return JSON.stringify(l) + "\n"; }).join("");
    var a = el("a");
    a.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    a.download = "labels-" + (st.annotator || "annotator").replace(/[^A-Za-z0-9._-]/g, "_") + ".jsonl";
    document.body.appendChild(a); a.click(); a.remove();
  }

  document.addEventListener("keydown", function (e) {
    var t = e.target, typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA");
    if (typing) {
      if (e.key === "Escape") { t.blur(); }
      if (t.id === "annotator" && e.key === "Enter") { setName(t.value); t.blur(); }
      if (t.id === "note" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        var my = mine(items[st.pos].idx);
        if (my && my.label !== null) { give(my.label); }
        t.blur();
      }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    var n = "1234567890".indexOf(e.key);
    if (n >= 0 && n < meta.scale.points.length) { give(meta.scale.points[n]); }
    else if (e.key === "u" || e.key === "z") { undo(); }
    else if (e.key === "s" || e.key === "ArrowRight") { move(st.pos + 1); }
    else if (e.key === "ArrowLeft") { move(st.pos - 1); }
    else if (e.key === "n" || e.key === "Enter") { nextOpen(); }
    else if (e.key === "e") { byId("note").focus(); }
    else { return; }
    e.preventDefault();
  });
  byId("scale").addEventListener("click", function (e) {
    var b = e.target.closest("button");
    if (b) { b.blur(); give(meta.scale.points[Number(b.dataset.point)]); }  // Enter then means "next"
  });
  byId("annotator").addEventListener("change", function () { setName(byId("annotator").value); });
  byId("prev").addEventListener("click", function () { move(st.pos - 1); });
  byId("next").addEventListener("click", function () { move(st.pos + 1); });
  byId("next-open").addEventListener("click", nextOpen);
  byId("download").addEventListener("click", download);

  var saved = "";
  try { saved = localStorage.getItem("jurist-review-annotator") || ""; } catch (e) { saved = ""; }
  var asked = new URLSearchParams(location.search).get("annotator");
  byId("annotator").value = asked || saved;
  renderRubric();
  if (server) { st.pending = load("pending", []); }
  else { load("lines", []).forEach(apply); }
  setName(asked || saved);
  var start = location.hash.match(/item=(\d+)/);
  if (start && position.has(Number(start[1]))) { st.pos = position.get(Number(start[1])); }
  render();
  if (server) { flush(); poll(); }
}());
