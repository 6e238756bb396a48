/* EvalArc pages: progressive enhancement only. Every table is complete HTML without this file.
 *
 * - Sortable columns (WAI-ARIA APG sortable table: a button per header, aria-sort on the
 *   active column only, numeric-aware comparison).
 * - A "Filter rows" box with a live "X of Y rows" count for tables of 8 rows or more.
 * - Pagination for tables of more than 100 rows; rows beyond what the HTML holds come from a
 *   <script type="application/json"> island named by the table's data-more-rows attribute
 *   (column-oriented, see table_island in evalarc/site/diff_page.py) and are built on demand
 *   with textContent (never innerHTML), so no data can become markup.
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

  function Row(index, tr, cells) {
    this.index = index;
    this.tr = tr;
    this.cells = cells; /* for island rows: function (column) -> [text, style] */
    this.width = 0;
    this.keys = null;
    this.text = null;
  }

  Row.prototype.cellText = function (column) {
    if (this.tr) {
      var td = this.tr.cells[column];
      if (!td) return "";
      return td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent;
    }
    return column < this.width ? this.cells(column)[0] : "";
  };

  Row.prototype.key = function (column) {
    if (this.keys === null) this.keys = [];
    var key = this.keys[column];
    if (key === undefined) {
      key = sortKey(this.cellText(column));
      this.keys[column] = key;
    }
    return key;
  };

  Row.prototype.matches = function (needle) {
    if (this.text === null) {
      var texts = [];
      if (this.tr) {
        texts.push(this.tr.textContent);
      } else {
        for (var column = 0; column < this.width; column += 1) texts.push(this.cellText(column));
      }
      this.text = texts.join(" ").toLowerCase();
    }
    return this.text.indexOf(needle) !== -1;
  };

  Row.prototype.build = function (headers) {
    var tr = document.createElement("tr");
    for (var column = 0; column < this.width; column += 1) {
      var cell = this.cells(column);
      var td = document.createElement("td");
      var header = headers[column];
      if (header && header.classList.contains("num")) td.className = "num";
      if (cell[1] === "code" || CELL_CLASSES[cell[1]] === true) {
        var inner = document.createElement(cell[1] === "code" ? "code" : "span");
        if (cell[1] !== "code") inner.className = cell[1];
        inner.textContent = cell[0];
        td.appendChild(inner);
      } else {
        td.textContent = cell[0];
      }
      tr.appendChild(td);
    }
    return tr;
  };

  function text(value) {
    return value === undefined || value === null ? "" : String(value);
  }

  /* A column of the island (see table_island in evalarc/site/diff_page.py) as a function
   * from row number to [text, style]. */
  function islandColumn(column) {
    if (column && Array.isArray(column.pick) && Array.isArray(column.from)) {
      var styles = Array.isArray(column.styles) ? column.styles : [];
      return function (row) {
        var picked = column.pick[row];
        return [text(column.from[picked]), text(styles[picked])];
      };
    }
    var texts = column && Array.isArray(column.text) ? column.text : [];
    var style = column && typeof column.style === "string" ? column.style : "";
    return function (row) { return [text(texts[row]), style]; };
  }

  function readIsland(table, firstIndex) {
    var id = table.getAttribute("data-more-rows");
    var island = id ? document.getElementById(id) : null;
    if (!island) return [];
    var data;
    try {
      data = JSON.parse(island.textContent);
    } catch (error) {
      return [];
    }
    if (!data || !Array.isArray(data.columns)) return [];
    var columns = data.columns.map(islandColumn);
    var count = Math.min(Number(data.count) || 0, 1000000);
    var rows = [];
    for (var number = 0; number < count; number += 1) {
      var row = new Row(firstIndex + number, null, cellsOf(columns, number));
      row.width = columns.length;
      rows.push(row);
    }
    return rows;
  }

  function cellsOf(columns, number) {
    return function (column) { return columns[column](number); };
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
    this.rows = rows.concat(readIsland(table, rows.length));
    rows = this.rows;
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
      if (!row.tr) row.tr = row.build(headers);
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

/* Trace steppers (site_templates/_trace.html.j2). An <ol data-stepper> lists every step of an
 * episode and reads completely without this section. Here it shows one step at a time, with
 * Previous/Next, a live "Step i of n" status, a "Show all steps" toggle, one button per step
 * (label and tone from data-step-label / data-step-tone, set with textContent), and
 * ArrowLeft/ArrowRight/Home/End while focus is in its controls. When done it sets
 * data-evalarc-steppers (the number of steppers) on <html>.
 */
(function () {
  "use strict";

  var TONES = { ok: true, bad: true, warn: true };

  function Stepper(list) {
    var self = this;
    this.list = list;
    this.steps = Array.prototype.filter.call(list.children, function (child) {
      return child.hasAttribute("data-step");
    });
    this.current = 0;
    this.all = false;
    var box = document.createElement("div");
    box.className = "stepper";
    var controls = document.createElement("div");
    controls.className = "stepper-controls";
    controls.setAttribute("role", "group");
    controls.setAttribute("aria-label", "Step through the trace");
    function button(parent, label, handler) {
      var element = document.createElement("button");
      element.type = "button";
      element.textContent = label;
      element.addEventListener("click", handler);
      parent.appendChild(element);
      return element;
    }
    this.previous = button(controls, "\u2190 Previous", function () { self.show(self.current - 1); });
    this.status = document.createElement("span");
    this.status.className = "step-status";
    this.status.setAttribute("aria-live", "polite");
    controls.appendChild(this.status);
    this.next = button(controls, "Next \u2192", function () { self.show(self.current + 1); });
    this.toggle = button(controls, "Show all steps", function () {
      self.all = !self.all;
      self.show(self.current);
    });
    var chips = document.createElement("div");
    chips.className = "step-chips";
    chips.setAttribute("role", "group");
    chips.setAttribute("aria-label", "Go to step");
    this.chips = this.steps.map(function (step, index) {
      var label = step.getAttribute("data-step-label") || String(index + 1);
      var chip = button(chips, label, function () { self.show(index); });
      var tone = step.getAttribute("data-step-tone");
      if (TONES[tone] === true) chip.setAttribute("data-tone", tone);
      return chip;
    });
    box.appendChild(controls);
    box.appendChild(chips);
    box.addEventListener("keydown", function (event) {
      var moves = { ArrowLeft: self.current - 1, ArrowRight: self.current + 1,
                    Home: 0, End: self.steps.length - 1 };
      if (!Object.prototype.hasOwnProperty.call(moves, event.key)) return;
      event.preventDefault();
      self.show(moves[event.key]);
    });
    list.parentNode.insertBefore(box, list);
    this.show(0);
  }

  Stepper.prototype.show = function (index) {
    var count = this.steps.length;
    var current = Math.min(Math.max(index, 0), count - 1);
    var all = this.all;
    var focused = document.activeElement;
    this.current = current;
    this.steps.forEach(function (step, position) {
      step.hidden = !all && position !== current;
    });
    this.chips.forEach(function (chip, position) {
      if (position === current) chip.setAttribute("aria-current", "step");
      else chip.removeAttribute("aria-current");
    });
    this.previous.disabled = current === 0;
    this.next.disabled = current === count - 1;
    this.toggle.setAttribute("aria-pressed", all ? "true" : "false");
    this.status.textContent = "Step " + (current + 1) + " of " + count;
    this.list.setAttribute("data-current-step", String(current));
    /* A button that just became disabled drops focus; keep it in the stepper. */
    if (focused === this.previous && this.previous.disabled) this.next.focus();
    if (focused === this.next && this.next.disabled) this.previous.focus();
  };

  function initSteppers() {
    var count = 0;
    var lists = document.querySelectorAll("ol[data-stepper]");
    Array.prototype.forEach.call(lists, function (list) {
      var steps = list.querySelectorAll(":scope > li[data-step]");
      if (steps.length < 2) return;
      new Stepper(list);
      count += 1;
    });
    document.documentElement.setAttribute("data-evalarc-steppers", String(count));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", initSteppers);
  } else {
    initSteppers();
  }
})();
