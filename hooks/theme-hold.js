// Material's script on the calculator page, held until the calculators' Python has loaded or
// failed (the status line settles), the reader first reaches for the page (a press, a key, a
// touch, a focus) or ten seconds have passed: its fifth of a second of the main thread is then
// not spent while Pyodide boots. hooks/calculator_page.py puts this right after Material's
// header, in place of the script tag. Until the script runs, this does what it would:
// - marks the page as running JavaScript, so the search box shows; a tap on the phone's search
//   button, or Material's keys for search (f, s, /), focus the box, which starts the script;
// - picks the palette as Material does (the stored choice, else the first whose media query
//   matches), so no colour changes when it runs, and switches it on a click of the toggle (or
//   Enter in it, to the next palette, focused), storing the choice where Material reads it;
// - follows Material's keys for the previous and next page (p or comma, n or full stop);
// - lets the navigation beside the page scroll within the window (.calc-theme-held in
//   calculator.css), as the script fits it.
// The script starts on DOMContentLoaded; once that has passed, the listener it adds is called
// at once.
(function () {
  var src = BUNDLE_SRC;
  var root = document.documentElement;
  var requested = false;
  var started = false; // Material's own listeners have taken over
  root.classList.remove("no-js");
  root.classList.add("js", "calc-theme-held");

  var form = document.querySelector("[data-md-component=palette]");
  var inputs = form ? Array.prototype.slice.call(form.querySelectorAll("input")) : [];
  var KEYS = ["media", "scheme", "primary", "accent"];
  var shown = 0; // the palette in use
  function palette(index) {
    shown = index;
    var input = inputs[index];
    var color = {};
    KEYS.forEach(function (key) { color[key] = input.getAttribute("data-md-color-" + key); });
    var applied = input;
    if (color.media === "(prefers-color-scheme)") {
      var light = matchMedia("(prefers-color-scheme: light)").matches;
      applied = form.querySelector("[data-md-color-media='(prefers-color-scheme: " + (light ? "light" : "dark") + ")']") || input;
    }
    KEYS.forEach(function (key) {
      var value = applied.getAttribute("data-md-color-" + key);
      if (value) document.body.setAttribute("data-md-color-" + key, value);
    });
    inputs.forEach(function (each, i) {
      if (each.nextElementSibling instanceof HTMLElement) each.nextElementSibling.hidden = i !== index;
    });
    return { index: index, color: color };
  }
  if (inputs.length) {
    var current = null;
    try { current = __md_get("__palette"); } catch (error) { /* storage refused: as on a first visit */ }
    var first = inputs.findIndex(function (input) { return matchMedia(input.getAttribute("data-md-color-media")).matches; });
    palette(Math.max(0, Math.min((current || { index: first }).index, inputs.length - 1)) || 0);
    var choose = function (index) {
      var chosen = palette(index);
      try { __md_set("__palette", chosen); } catch (error) { /* not kept for the next page */ }
      load();
    };
    form.addEventListener("click", function (event) {
      var label = !started && event.target.closest && event.target.closest("label");
      var input = label && document.getElementById(label.htmlFor);
      if (!input || inputs.indexOf(input) < 0) return;
      event.preventDefault();
      choose(inputs.indexOf(input));
    }, true);
    form.addEventListener("keydown", function (event) {
      if (started || event.key !== "Enter") return;
      var next = (shown + 1) % inputs.length;
      choose(next);
      inputs[next].focus();
    });
  }

  var search = document.querySelector(".md-search__input");
  var toggle = document.getElementById("__search");
  if (toggle && search) toggle.addEventListener("change", function () {
    if (!started && toggle.checked) search.focus(); // within the tap, so a phone shows its keyboard
  });
  function editable(element) {
    if (element instanceof HTMLInputElement) return element.type !== "radio";
    return element instanceof HTMLSelectElement || element instanceof HTMLTextAreaElement || Boolean(element && element.isContentEditable);
  }
  addEventListener("keydown", function (event) {
    if (started || event.metaKey || event.ctrlKey || editable(document.activeElement)) return;
    var link = { p: "prev", ",": "prev", n: "next", ".": "next" }[event.key];
    if (link && document.querySelector("link[rel=" + link + "]")) {
      location.href = document.querySelector("link[rel=" + link + "]").href;
    } else if ((event.key === "f" || event.key === "s" || event.key === "/") && search) {
      event.preventDefault();
      search.focus();
      search.select();
    }
  });

  var reach = ["pointerdown", "keydown", "touchstart", "focusin"];
  function load() {
    if (requested) return;
    requested = true;
    reach.forEach(function (type) { removeEventListener(type, load, true); });
    var script = document.createElement("script");
    // The script being run, as the browser knows it: a script may give `document` a currentScript
    // of its own while it runs (PyScript did, for its <script type="py">), and leave it there.
    var running = Object.getOwnPropertyDescriptor(Document.prototype, "currentScript").get;
    document.addEventListener = function (type, listener, options) {
      if (type !== "DOMContentLoaded" || !listener || running.call(document) !== script) {
        return EventTarget.prototype.addEventListener.apply(this, arguments);
      }
      var run = function (event) {
        if (typeof listener === "function") listener.call(document, event);
        else listener.handleEvent(event);
        started = true;
        root.classList.remove("calc-theme-held");
      };
      if (document.readyState === "loading") return EventTarget.prototype.addEventListener.call(this, type, run, options);
      queueMicrotask(function () { run(new Event(type)); });
    };
    script.src = src;
    script.onload = script.onerror = function () { delete document.addEventListener; };
    document.body.append(script);
  }
  reach.forEach(function (type) { addEventListener(type, load, { capture: true, passive: true }); });
  setTimeout(load, 10000);
  document.addEventListener("DOMContentLoaded", function () {
    var status = document.getElementById("calc-status");
    var settled = function () { return !status || status.dataset.state === "ready" || status.dataset.state === "failed"; };
    if (settled()) return load();
    new MutationObserver(function (changes, watcher) {
      if (settled()) { watcher.disconnect(); load(); }
    }).observe(status, { attributes: true, attributeFilter: ["data-state"] });
  });
})();
