/* EvalArc pages: progressive enhancement only. Every table is complete HTML without this file.
 *
 * - Sortable columns (WAI-ARIA APG sortable table: a button per header, aria-sort on the
 *   active column only, numeric-aware comparison).
 * - A "Filter rows" box with a live "X of Y rows" count for tables of 8 rows or more.
 * - Pagination for tables of more than 100 rows; rows beyond what the HTML holds come from a
 *   <script type="application/json"> island named by the table's data-more-rows attribute
 *   (column-oriented, see table_island in evalarc/pages/diff.py) and are built on demand
 *   with textContent (never innerHTML), so no data can become markup.
 * - A light/dark toggle (remembered when the browser allows storage).
 * When done it sets data-evalarc-ready on <html> and a performance mark "evalarc-ready".
 */
(function () {
  "use strict";

  var PAGE_SIZE = 100; /* assets/evalarc.css hides rows past it until this script pages */
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

  /* The exact-match key of a row (data-kind / data-cause on HTML rows, island "keys"). */
  Row.prototype.exactKey = function (name) {
    if (this.keyCells) {
      var column = this.keyCells[name];
      return column ? column(this.number)[0] : "";
    }
    return this.tr ? text(this.tr.getAttribute("data-" + name)) : "";
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
      if (cell[1] === "case") {
        td.setAttribute("data-case", cell[0]);
        td.appendChild(caseButton(cell[0]));
      } else if (cell[1] === "code" || CELL_CLASSES[cell[1]] === true) {
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

  /* A button that opens a case view (the case-view section below listens for its clicks). */
  function caseButton(id) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "case-open";
    button.setAttribute("data-case", id);
    var code = document.createElement("code");
    code.className = "id";
    code.textContent = id;
    button.appendChild(code);
    return button;
  }
  window.evalarcCaseButton = caseButton;

  /* A column of the island (see table_island in evalarc/pages/diff.py) as a function
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
    var keys = {};
    if (data.keys && typeof data.keys === "object") {
      Object.keys(data.keys).forEach(function (name) {
        var keyColumns = data.keys[name];
        if (Array.isArray(keyColumns) && keyColumns.length) keys[name] = islandColumn(keyColumns[0]);
      });
    }
    var rows = [];
    for (var number = 0; number < count; number += 1) {
      var row = new Row(firstIndex + number, null, cellsOf(columns, number));
      row.width = columns.length;
      row.keyCells = keys;
      row.number = number;
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
    this.exact = {};
    this.page = 0;
    this.paged = rows.length > PAGE_SIZE;
    this.sortColumn = -1;
    this.ascending = true;
    this.name = "table-" + tableCount;
    table.classList.add("enhanced");
    table.evalarcTable = this;
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
    this.input = input;
    input.addEventListener("input", function () {
      self.needle = input.value.trim().toLowerCase();
      self.page = 0;
      self.applyFilter();
      self.table.dispatchEvent(new CustomEvent("evalarc-filter"));
    });
    this.table.parentNode.insertBefore(tools, this.table);
  };

  Enhanced.prototype.applyFilter = function () {
    var needle = this.needle;
    var exact = this.exact;
    var names = Object.keys(exact).filter(function (name) { return exact[name] !== ""; });
    if (!needle && !names.length) {
      this.view = this.order.slice();
    } else {
      this.view = this.order.filter(function (row) {
        for (var i = 0; i < names.length; i += 1) {
          if (row.exactKey(names[i]) !== exact[names[i]]) return false;
        }
        return !needle || row.matches(needle);
      });
    }
    this.render();
  };

  /* Exact-match filter on a row key (kind, cause); "" clears it. */
  Enhanced.prototype.setExact = function (name, value) {
    this.exact[name] = value;
    this.page = 0;
    this.applyFilter();
  };

  Enhanced.prototype.setNeedle = function (value) {
    if (this.input) this.input.value = value;
    this.needle = value.trim().toLowerCase();
    this.page = 0;
    this.applyFilter();
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

/* Diff pages: exact-match filters (kind, cause) with the state in the URL hash, and case views.
 *
 * Filters: <select data-filter-for=TABLE data-filter-key=NAME> filters TABLE's rows whose key
 * NAME (data-NAME on HTML rows, "keys" in the island) equals the chosen value exactly, so
 * "unassessed" never also matches "less_covered". The hash holds kind, cause, q (the text filter)
 * and case (the open case view), e.g. #kind=regressed&cause=%232, so a filtered view can be
 * linked.
 *
 * Case views: the page's "case-index" island lists every case id, its chunk and the chunk files
 * (case-views/<sha256>.js, see evalarc/pages/case_views.py). Opening a case inserts that chunk's
 * script element once (allowed by the page policy's 'strict-dynamic'); the chunk calls
 * evalarcChunk({cases: ...}) with data only. Both sides are laid out section by section with
 * textContent, never markup; a cut text says where it was truncated. When a view is open it sets
 * data-case-open on <html> and a performance mark "evalarc-case-open".
 */
(function () {
  "use strict";

  var CHUNK_PATH = /^case-views\/[0-9a-f]{64}\.js$/;
  var MATCHES_SHOWN = 12;
  var index = null;
  var positions = null;
  var cases = Object.create(null);
  var requested = Object.create(null);
  var wanted = null;
  var view = null;
  var textBytes = 4096;

  function readIndex() {
    var island = document.getElementById("case-index");
    if (!island) return null;
    try {
      var data = JSON.parse(island.textContent);
      if (!data || !Array.isArray(data.cases) || !Array.isArray(data.chunks) ||
          !Array.isArray(data.chunk_of)) return null;
      if (typeof data.text_bytes === "number") textBytes = data.text_bytes;
      return data;
    } catch (error) {
      return null;
    }
  }

  function hashState() {
    var state = {};
    var raw = window.location.hash.replace(/^#/, "");
    raw.split("&").forEach(function (part) {
      if (!part) return;
      var at = part.indexOf("=");
      if (at < 1) return;
      try {
        state[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
      } catch (error) { /* a malformed escape is ignored */ }
    });
    return state;
  }

  function writeHash(changes) {
    var state = hashState();
    Object.keys(changes).forEach(function (name) {
      if (changes[name]) state[name] = changes[name];
      else delete state[name];
    });
    var parts = Object.keys(state).sort().map(function (name) {
      return encodeURIComponent(name) + "=" + encodeURIComponent(state[name]);
    });
    var hash = parts.length ? "#" + parts.join("&") : " ";
    try {
      window.history.replaceState(null, "", hash === " " ? window.location.pathname : hash);
    } catch (error) { /* some file:// setups refuse; the view still works */ }
  }

  function element(tag, className, content) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (content !== undefined) node.textContent = content;
    return node;
  }

  function sectionNode(section, file) {
    var box = element("div", "case-section");
    var title = element("h4", "", section.title);
    if (section.tone === "ok" || section.tone === "bad" || section.tone === "warn") {
      box.setAttribute("data-tone", section.tone);
    }
    box.appendChild(title);
    var list = element("dl", "case-items");
    (Array.isArray(section.items) ? section.items : []).forEach(function (item) {
      var dt = element("dt", "", String(item.l));
      var dd = element("dd");
      var body = element(item.pre ? "pre" : "div", "case-text", String(item.t));
      dd.appendChild(body);
      if (item.mark === "diverge") {
        dt.appendChild(document.createTextNode(" "));
        dt.appendChild(element("span", "badge warn", "first divergence"));
        dd.classList.add("diverge");
      }
      if (typeof item.cut === "number") {
        dd.appendChild(element("p", "muted cut",
          "truncated at " + textBytes + " bytes of " + item.cut + "; the full text is in " + file +
          " in this bundle"));
      }
      list.appendChild(dt);
      list.appendChild(dd);
    });
    box.appendChild(list);
    if (section.dropped) {
      box.appendChild(element("p", "muted", section.dropped + " more items are in " + file));
    }
    return box;
  }

  function titlesOf(side) {
    return side && Array.isArray(side.sections)
      ? side.sections.map(function (section) { return String(section.title); }) : [];
  }

  function render(id) {
    var entry = cases[id];
    if (!view || !entry) return;
    var sides = Array.isArray(index.sides) ? index.sides : ["baseline", "current"];
    while (view.firstChild) view.removeChild(view.firstChild);
    var head = element("div", "case-head");
    var heading = element("h2", "", "Case ");
    heading.id = "case-view-title";
    heading.appendChild(element("code", "id", id));
    head.appendChild(heading);
    var close = element("button", "case-close", "Close case view");
    close.type = "button";
    close.addEventListener("click", function () { closeCase(); });
    head.appendChild(close);
    view.appendChild(head);
    var grid = element("div", "case-grid");
    ["baseline", "current"].forEach(function (role, position) {
      var label = element("h3", "case-side-title", role + " · ");
      label.appendChild(element("code", "id", String(sides[position] || role)));
      grid.appendChild(label);
    });
    var titles = titlesOf(entry.baseline);
    titlesOf(entry.current).forEach(function (title) {
      if (titles.indexOf(title) === -1) titles.push(title);
    });
    if (!entry.baseline && !entry.current) {
      grid.appendChild(element("p", "muted", "Neither input file records evidence for this case."));
    }
    titles.forEach(function (title) {
      ["baseline", "current"].forEach(function (role, position) {
        var side = entry[role];
        var file = String(sides[position] || role);
        var cell = element("div", "case-cell");
        var found = null;
        if (side && Array.isArray(side.sections)) {
          for (var i = 0; i < side.sections.length; i += 1) {
            if (String(side.sections[i].title) === title) { found = side.sections[i]; break; }
          }
        }
        if (found) cell.appendChild(sectionNode(found, file));
        else {
          var missing = element("div", "case-section missing");
          missing.appendChild(element("h4", "", title));
          missing.appendChild(element("p", "muted", side ? "not recorded on this side"
            : "this case is not in " + file));
          cell.appendChild(missing);
        }
        grid.appendChild(cell);
      });
    });
    view.appendChild(grid);
    view.hidden = false;
    document.documentElement.setAttribute("data-case-open", id);
    if (window.performance && window.performance.mark) window.performance.mark("evalarc-case-open");
  }

  function positionOf(id) {
    if (positions === null) {
      positions = new Map();
      index.cases.forEach(function (caseId, position) { positions.set(String(caseId), position); });
    }
    return positions.has(id) ? positions.get(id) : -1;
  }

  function openCase(id, focus) {
    if (!index) return;
    var position = positionOf(id);
    if (position === -1) return;
    wanted = id;
    writeHash({ "case": id });
    if (cases[id]) {
      render(id);
      if (focus) view.focus();
      return;
    }
    var chunk = String(index.chunks[index.chunk_of[position]]);
    if (!CHUNK_PATH.test(chunk) || requested[chunk]) return;
    requested[chunk] = true;
    var script = document.createElement("script");
    script.src = chunk;
    script.addEventListener("load", function () {
      if (wanted === id) { render(id); if (focus) view.focus(); }
    });
    script.addEventListener("error", function () {
      requested[chunk] = false;
      while (view.firstChild) view.removeChild(view.firstChild);
      view.appendChild(element("p", "step-error", "The case view file " + chunk +
        " could not be loaded."));
      view.hidden = false;
    });
    document.head.appendChild(script);
  }

  function closeCase() {
    wanted = null;
    if (view) { view.hidden = true; while (view.firstChild) view.removeChild(view.firstChild); }
    document.documentElement.removeAttribute("data-case-open");
    writeHash({ "case": "" });
  }

  window.evalarcChunk = function (data) {
    if (!data || typeof data.cases !== "object" || data.cases === null) return;
    var given = data.cases;
    Object.keys(given).forEach(function (id) { cases[id] = given[id]; });
    /* The chunk is an object literal, where a "__proto__" key sets the object's prototype
     * instead of adding a property: the case with that id is the prototype, if it is not the
     * plain one. (`cases` has no prototype, so cases["__proto__"] is an ordinary property.) */
    var proto = Object.getPrototypeOf(given);
    if (proto !== null && proto !== Object.prototype) cases["__proto__"] = proto;
  };

  function addSearch(box) {
    var label = element("label", "", "Open a case ");
    var input = element("input", "case-find");
    input.type = "search";
    input.setAttribute("aria-describedby", "case-find-count");
    label.appendChild(input);
    var count = element("span", "muted", "");
    count.id = "case-find-count";
    var list = element("div", "case-matches");
    box.appendChild(label);
    box.appendChild(count);
    box.appendChild(list);
    input.addEventListener("input", function () {
      var needle = input.value.trim().toLowerCase();
      while (list.firstChild) list.removeChild(list.firstChild);
      if (!needle) { count.textContent = ""; return; }
      var found = 0;
      for (var i = 0; i < index.cases.length; i += 1) {
        var id = String(index.cases[i]);
        if (id.toLowerCase().indexOf(needle) === -1) continue;
        found += 1;
        if (found <= MATCHES_SHOWN) list.appendChild(window.evalarcCaseButton(id));
      }
      count.textContent = found + " of " + index.cases.length + " cases match" +
        (found > MATCHES_SHOWN ? " (first " + MATCHES_SHOWN + " shown)" : "");
    });
  }

  var filterSelects = [];

  /* Apply the hash's kind/cause/q state to the filters (on load and on hashchange). */
  function applyFilterState(state) {
    filterSelects.forEach(function (entry) {
      var value = state[entry.name] === undefined ? "" : state[entry.name];
      var known = Array.prototype.some.call(entry.select.options, function (option) {
        return option.value === value;
      });
      if (!known) value = "";
      entry.select.value = value;
      entry.table.setExact(entry.name, value);
    });
    var main = document.getElementById("changed-checks");
    var table = main && main.evalarcTable;
    if (table && (state.q || "") !== table.needle) table.setNeedle(state.q || "");
  }

  function initFilters() {
    var selects = document.querySelectorAll("select[data-filter-for]");
    Array.prototype.forEach.call(selects, function (select) {
      var table = document.getElementById(select.getAttribute("data-filter-for"));
      var enhanced = table && table.evalarcTable;
      if (!enhanced) return;
      var name = select.getAttribute("data-filter-key");
      var box = select.closest("[hidden]");
      if (box) box.hidden = false;
      filterSelects.push({ select: select, table: enhanced, name: name });
      select.addEventListener("change", function () {
        enhanced.setExact(name, select.value);
        var change = {};
        change[name] = select.value;
        writeHash(change);
      });
    });
    var main = document.getElementById("changed-checks");
    var table = main && main.evalarcTable;
    if (table) {
      main.addEventListener("evalarc-filter", function () { writeHash({ q: table.needle }); });
    }
    applyFilterState(hashState());
    var clusters = document.querySelectorAll("li.cluster[data-cause]");
    var causeSelect = document.getElementById("cause-filter");
    if (causeSelect && table) {
      Array.prototype.forEach.call(clusters, function (item) {
        var show = element("button", "cluster-show", "Show these rows");
        show.type = "button";
        show.addEventListener("click", function () {
          causeSelect.value = item.getAttribute("data-cause");
          causeSelect.dispatchEvent(new Event("change"));
          main.scrollIntoView();
        });
        item.firstElementChild.appendChild(document.createTextNode(" "));
        item.firstElementChild.appendChild(show);
      });
    }
  }

  function initCases() {
    index = readIndex();
    view = document.getElementById("case-view");
    if (!index || !view) return;
    view.setAttribute("tabindex", "-1");
    var note = document.querySelector("#case-search .no-script-note");
    if (note) note.hidden = true;
    addSearch(document.getElementById("case-search"));
    Array.prototype.forEach.call(document.querySelectorAll("td[data-case]"), function (td) {
      var id = td.getAttribute("data-case");
      while (td.firstChild) td.removeChild(td.firstChild);
      td.appendChild(window.evalarcCaseButton(id));
    });
    document.addEventListener("click", function (event) {
      var target = event.target instanceof Element ? event.target.closest("button.case-open") : null;
      if (target) openCase(target.getAttribute("data-case"), true);
    });
    var state = hashState();
    if (state["case"]) openCase(state["case"], false);
  }

  function onHashChange() {
    var state = hashState();
    applyFilterState(state);
    if (!index) return;
    if (state["case"] && state["case"] !== wanted) openCase(state["case"], false);
    else if (!state["case"] && wanted !== null) closeCase();
  }

  function init() {
    initFilters();
    initCases();
    window.addEventListener("hashchange", onHashChange);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
