/* EvalArc pages: progressive enhancement only. Every table is complete HTML without this file.
 *
 * - Sortable columns (WAI-ARIA APG sortable table: a button per header, aria-sort on the
 *   active column only, numeric-aware comparison).
 * - A "Filter rows" box with a live "X of Y rows" count for tables of 8 rows or more.
 * - Pagination for tables of more than 100 rows; rows beyond what the HTML holds come from a
 *   <script type="application/json"> island named by the table's data-more-rows attribute
 *   (an array of rows; a cell is text or [text, "code" | "badge ok" | "badge bad"]) and are
 *   built on demand with textContent (never innerHTML), so no data can become markup.
 * - A light/dark toggle (remembered when the browser allows storage).
 * When done it sets data-evalarc-ready on <html> and a performance mark "evalarc-ready".
 */
(function () {
  "use strict";

  var PAGE_SIZE = 100;
  var FILTER_MIN_ROWS = 8;
  var SORT_MIN_ROWS = 3;
  var CELL_CLASSES = { "badge ok": true, "badge bad": true };
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  var FRACTION = /^(-?\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)/;
  var NUMBER = /^[+-]?(?:\d[\d,]*)?(?:\.\d+)?(?:e[+-]?\d+)?/i;

  function sortKey(text) {
    var trimmed = text.trim().replace(/^\u2212/, "-");
    var fraction = FRACTION.exec(trimmed);
    if (fraction) {
      var whole = parseFloat(fraction[2]);
      return { num: whole > 0 ? parseFloat(fraction[1]) / whole : -1, text: trimmed };
    }
    var number = NUMBER.exec(trimmed);
    if (number && /\d/.test(number[0])) {
      return { num: parseFloat(number[0].replace(/,/g, "")), text: trimmed };
    }
    return { num: null, text: trimmed };
  }

  function compareKeys(a, b) {
    if (a.num !== null && b.num !== null) {
      return a.num === b.num ? collator.compare(a.text, b.text) : a.num - b.num;
    }
    if (a.num !== null) return -1;
    if (b.num !== null) return 1;
    return collator.compare(a.text, b.text);
  }

  function cellText(cell) {
    return Array.isArray(cell) ? String(cell[0]) : String(cell);
  }

  function Row(index, tr, data) {
    this.index = index;
    this.tr = tr;
    this.data = data;
    this.keys = null;
    this.text = null;
  }

  Row.prototype.cellTexts = function () {
    if (this.tr) {
      return Array.prototype.map.call(this.tr.cells, function (td) {
        return td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
      });
    }
    return this.data.map(cellText);
  };

  Row.prototype.key = function (column) {
    if (this.keys === null) this.keys = this.cellTexts().map(sortKey);
    return this.keys[column] || { num: null, text: "" };
  };

  Row.prototype.matches = function (needle) {
    if (this.text === null) {
      this.text = (this.tr ? this.tr.textContent : this.data.map(cellText).join(" "))
        .toLowerCase();
    }
    return this.text.indexOf(needle) !== -1;
  };

  function buildRow(cells, headers) {
    var tr = document.createElement("tr");
    cells.forEach(function (cell, column) {
      var td = document.createElement("td");
      var header = headers[column];
      if (header && header.classList.contains("num")) td.className = "num";
      if (Array.isArray(cell)) {
        var style = String(cell[1]);
        var inner = document.createElement(style === "code" ? "code" : "span");
        if (CELL_CLASSES[style] === true) inner.className = style;
        inner.textContent = String(cell[0]);
        td.appendChild(inner);
      } else {
        td.textContent = String(cell);
      }
      tr.appendChild(td);
    });
    return tr;
  }

  function readIsland(table) {
    var id = table.getAttribute("data-more-rows");
    if (!id) return [];
    var island = document.getElementById(id);
    if (!island) return [];
    try {
      var rows = JSON.parse(island.textContent);
      return Array.isArray(rows) ? rows.filter(Array.isArray) : [];
    } catch (error) {
      return [];
    }
  }

  var tableCount = 0;

  function Enhanced(table) {
    tableCount += 1;
    this.table = table;
    this.tbody = table.tBodies[0];
    this.headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    var rows = [];
    Array.prototype.forEach.call(this.tbody.rows, function (tr) {
      rows.push(new Row(rows.length, tr, null));
    });
    readIsland(table).forEach(function (cells) {
      rows.push(new Row(rows.length, null, cells));
    });
    this.rows = rows;
    this.order = rows.slice();
    this.view = rows.slice();
    this.needle = "";
    this.page = 0;
    this.paged = rows.length > PAGE_SIZE;
    this.sortColumn = -1;
    this.ascending = true;
    this.name = "table-" + tableCount;
    table.classList.add("enhanced");
    if (rows.length >= SORT_MIN_ROWS) this.addSorting();
    if (rows.length >= FILTER_MIN_ROWS) this.addFilter();
    if (this.paged) this.addPager();
    this.render();
  }

  Enhanced.prototype.addSorting = function () {
    var self = this;
    this.headers.forEach(function (th, column) {
      if (th.hasAttribute("data-nosort")) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      while (th.firstChild) button.appendChild(th.firstChild);
      var glyph = document.createElement("span");
      glyph.className = "glyph";
      glyph.setAttribute("aria-hidden", "true");
      glyph.textContent = "\u2195";
      button.appendChild(glyph);
      button.addEventListener("click", function () { self.sortBy(column); });
      th.appendChild(button);
    });
  };

  Enhanced.prototype.sortBy = function (column) {
    this.ascending = this.sortColumn === column ? !this.ascending : true;
    this.sortColumn = column;
    var direction = this.ascending ? 1 : -1;
    this.order = this.rows.slice().sort(function (a, b) {
      return direction * compareKeys(a.key(column), b.key(column)) || a.index - b.index;
    });
    var ascending = this.ascending;
    this.headers.forEach(function (th, index) {
      var glyph = th.querySelector(".glyph");
      if (index === column) {
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        if (glyph) glyph.textContent = ascending ? "\u25B2" : "\u25BC";
      } else {
        th.removeAttribute("aria-sort");
        if (glyph) glyph.textContent = "\u2195";
      }
    });
    this.applyFilter();
  };

  Enhanced.prototype.addFilter = function () {
    var self = this;
    var tools = document.createElement("div");
    tools.className = "table-tools";
    var label = document.createElement("label");
    label.textContent = "Filter rows ";
    var input = document.createElement("input");
    input.type = "search";
    input.className = "filter";
    label.appendChild(input);
    var count = document.createElement("span");
    count.className = "count";
    count.setAttribute("aria-live", "polite");
    tools.appendChild(label);
    tools.appendChild(count);
    this.count = count;
    if (!this.table.id) this.table.id = this.name;
    input.setAttribute("aria-controls", this.table.id);
    input.addEventListener("input", function () {
      self.needle = input.value.trim().toLowerCase();
      self.page = 0;
      self.applyFilter();
    });
    this.table.parentNode.insertBefore(tools, this.table);
  };

  Enhanced.prototype.applyFilter = function () {
    var needle = this.needle;
    this.view = needle ? this.order.filter(function (row) { return row.matches(needle); })
      : this.order.slice();
    this.render();
  };

  Enhanced.prototype.addPager = function () {
    var self = this;
    var pager = document.createElement("div");
    pager.className = "pager";
    var previous = document.createElement("button");
    previous.type = "button";
    previous.textContent = "Previous";
    var next = document.createElement("button");
    next.type = "button";
    next.textContent = "Next";
    var status = document.createElement("span");
    status.className = "page-status";
    status.setAttribute("aria-live", "polite");
    previous.addEventListener("click", function () { self.page -= 1; self.render(); });
    next.addEventListener("click", function () { self.page += 1; self.render(); });
    pager.appendChild(previous);
    pager.appendChild(status);
    pager.appendChild(next);
    this.pager = { previous: previous, next: next, status: status };
    this.table.parentNode.insertBefore(pager, this.table.nextSibling);
  };

  Enhanced.prototype.render = function () {
    var total = this.view.length;
    var shown = this.view;
    if (this.paged) {
      var pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
      this.page = Math.min(Math.max(this.page, 0), pages - 1);
      var start = this.page * PAGE_SIZE;
      shown = this.view.slice(start, start + PAGE_SIZE);
      this.pager.previous.disabled = this.page === 0;
      this.pager.next.disabled = this.page >= pages - 1;
      this.pager.status.textContent = total === 0 ? "No rows"
        : "Rows " + (start + 1) + "\u2013" + (start + shown.length) + " of " + total +
          " (page " + (this.page + 1) + " of " + pages + ")";
    }
    var headers = this.headers;
    var fragment = document.createDocumentFragment();
    shown.forEach(function (row) {
      if (!row.tr) row.tr = buildRow(row.data, headers);
      fragment.appendChild(row.tr);
    });
    while (this.tbody.firstChild) this.tbody.removeChild(this.tbody.firstChild);
    this.tbody.appendChild(fragment);
    if (this.count) this.count.textContent = total + " of " + this.rows.length + " rows";
  };

  function initTheme() {
    var root = document.documentElement;
    try {
      var stored = window.localStorage.getItem("evalarc-theme");
      if (stored === "light" || stored === "dark") root.setAttribute("data-theme", stored);
    } catch (error) { /* storage may be off for file:// pages; the toggle still works */ }
    function current() {
      var chosen = root.getAttribute("data-theme");
      if (chosen) return chosen;
      return window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "theme-toggle";
    function label() {
      var other = current() === "dark" ? "light" : "dark";
      button.textContent = other === "dark" ? "Dark theme" : "Light theme";
      button.setAttribute("aria-label", "Switch to the " + other + " theme");
    }
    button.addEventListener("click", function () {
      var other = current() === "dark" ? "light" : "dark";
      root.setAttribute("data-theme", other);
      try { window.localStorage.setItem("evalarc-theme", other); } catch (error) { /* ok */ }
      label();
    });
    label();
    var main = document.querySelector("main");
    if (main) main.insertBefore(button, main.firstChild);
  }

  function init() {
    initTheme();
    var tables = document.querySelectorAll("main table");
    Array.prototype.forEach.call(tables, function (table) {
      if (table.hasAttribute("data-static") || !table.tHead || !table.tBodies.length) return;
      if (!table.tHead.rows.length) return;
      new Enhanced(table);
    });
    document.documentElement.setAttribute("data-evalarc-ready", "1");
    if (window.performance && window.performance.mark) window.performance.mark("evalarc-ready");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
