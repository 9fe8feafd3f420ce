(function () {
  "use strict";
  // Every value from the data is placed with textContent: nothing in it is parsed as HTML.
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var columns = data.columns || [];
  var rows = data.rows || [];
  var byId = {};
  rows.forEach(function (r) { byId[r.id] = r; });
  var PAGE = 50;
  var state = { sort: null, desc: false, filter: "", unmeasured: false, disagree: false, page: 0 };

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }
  function show(v) {
    if (v === null || v === undefined) { return "\u2014"; }
    if (typeof v === "number") { return Number.isInteger(v) ? String(v) : v.toFixed(4); }
    if (typeof v === "object") { return JSON.stringify(v); }
    return String(v);
  }
  function cut(text, n) { return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  function compare(a, b) {
    var x = a.c[state.sort], y = b.c[state.sort];
    var xn = x === null || x === undefined, yn = y === null || y === undefined;
    if (xn || yn) { return xn === yn ? 0 : (xn ? 1 : -1); }  // missing values last
    var r = (typeof x === "number" && typeof y === "number") ? x - y
      : String(x).localeCompare(String(y));
    return state.desc ? -r : r;
  }
  function visible() {
    var needle = state.filter.toLowerCase();
    var out = rows.filter(function (r) {
      if (state.unmeasured && !r.u) { return false; }
      if (state.disagree && !r.h) { return false; }
      if (!needle) { return true; }
      return columns.some(function (c) { return show(r.c[c.key]).toLowerCase().indexOf(needle) >= 0; });
    });
    if (state.sort !== null) { out.sort(compare); }
    return out;
  }
  function render() {
    var table = document.getElementById("rows-table");
    if (!table) { return; }
    var list = visible();
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var tbody = table.querySelector("tbody");
    tbody.textContent = "";
    list.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (r) {
      var tr = el("tr");
      tr.dataset.row = r.id;
      if (r.u) { tr.classList.add("unmeasured"); }
      if (r.h) { tr.classList.add("disagree"); }  // the judges of a panel disagree most here
      columns.forEach(function (c) {
        tr.appendChild(el("td", cut(show(r.c[c.key]), 120), c.num ? "num" : null));
      });
      tbody.appendChild(tr);
    });
    document.getElementById("rows-count").textContent =
      list.length + " of " + rows.length + " rows; page " + (state.page + 1) + " of " + pages;
    table.querySelectorAll("th").forEach(function (th) {
      th.classList.remove("sorted-asc", "sorted-desc");
      if (th.dataset.key === state.sort) { th.classList.add(state.desc ? "sorted-desc" : "sorted-asc"); }
    });
  }
  function value(v) {
    if (v !== null && typeof v === "object") { return el("pre", JSON.stringify(v, null, 2)); }
    return el("dd", show(v));
  }
  function openRow(id) {
    var r = byId[id];
    var panel = document.getElementById("detail");
    if (!r || !panel) { return; }
    panel.textContent = "";
    var close = el("button", "close");
    close.type = "button";
    close.addEventListener("click", function () { panel.hidden = true; });
    panel.appendChild(close);
    panel.appendChild(el("h3", r.title || ("row " + id)));
    (r.d || []).forEach(function (section) {
      panel.appendChild(el("h4", section.title));
      var dl = el("dl");
      section.fields.forEach(function (f) {
        dl.appendChild(el("dt", f[0]));
        var v = value(f[1]);
        dl.appendChild(v.tagName === "PRE" ? (function () { var d = el("dd"); d.appendChild(v); return d; })() : v);
      });
      panel.appendChild(dl);
    });
    panel.hidden = false;
    panel.dataset.row = String(id);
    panel.scrollIntoView({ block: "nearest" });
  }
  document.addEventListener("click", function (event) {
    var tr = event.target.closest ? event.target.closest("tr[data-row]") : null;
    if (tr) { openRow(tr.dataset.row); }
  });
  var table = document.getElementById("rows-table");
  if (table) {
    var head = table.querySelector("thead tr");
    columns.forEach(function (c) {
      var th = el("th", c.label);
      th.dataset.key = c.key;
      th.addEventListener("click", function () {
        if (state.sort === c.key) { state.desc = !state.desc; } else { state.sort = c.key; state.desc = !!c.num; }
        render();
      });
      head.appendChild(th);
    });
    document.getElementById("rows-filter").addEventListener("input", function (e) {
      state.filter = e.target.value; state.page = 0; render();
    });
    var only = document.getElementById("rows-unmeasured");
    if (only) { only.addEventListener("change", function (e) { state.unmeasured = e.target.checked; state.page = 0; render(); }); }
    var split = document.getElementById("rows-disagree");
    if (split) { split.addEventListener("change", function (e) { state.disagree = e.target.checked; state.page = 0; render(); }); }
    document.getElementById("rows-prev").addEventListener("click", function () { state.page = Math.max(0, state.page - 1); render(); });
    document.getElementById("rows-next").addEventListener("click", function () { state.page += 1; render(); });
    render();
  }
}());
