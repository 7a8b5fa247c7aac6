// Material wraps each table in a div that scrolls sideways when the table is wider than the
// column. A region that scrolls must be reachable from the keyboard and named: give each one
// that scrolls a tab stop, the role "region" and the name of the section it is in.
(function () {
  const WRAPS = ".md-typeset__scrollwrap, .md-typeset .calc-table";
  function sectionName(element) {
    for (let node = element.previousElementSibling; node; node = node.previousElementSibling) {
      if (/^H[1-6]$/.test(node.tagName)) return node.textContent.replace("¶", "").trim();
    }
    const title = document.querySelector(".md-content h1");
    return title ? title.textContent.replace("¶", "").trim() : document.title;
  }
  function name(wrap) {
    const caption = wrap.querySelector("caption");
    return caption ? caption.textContent.trim() : sectionName(wrap);
  }
  function label(wrap) {
    if (wrap.hasAttribute("tabindex") || wrap.scrollWidth <= wrap.clientWidth + 1) return;
    const used = new Set(Array.from(document.querySelectorAll("[role=region][aria-label]"), (e) => e.getAttribute("aria-label")));
    let text = "Table, scrolls sideways: " + name(wrap);
    for (let n = 2; used.has(text); n++) text = text.replace(/ \(\d+\)$/, "") + ` (${n})`;
    wrap.setAttribute("tabindex", "0");
    wrap.setAttribute("role", "region");
    wrap.setAttribute("aria-label", text);
  }
  // A wrapper is measured when it or its table is laid out at a new size (on the page's first
  // layout, a narrower window, a calculator's new result): a ResizeObserver reports it after the
  // browser has laid the page out, so measuring never lays it out again.
  const sizes = new ResizeObserver((entries) => {
    for (const entry of entries) {
      const wrap = entry.target.matches(WRAPS) ? entry.target : entry.target.parentElement;
      if (wrap && wrap.matches(WRAPS)) label(wrap);
    }
  });
  const watched = new WeakSet();
  function watch() {
    for (const wrap of document.querySelectorAll(WRAPS)) {
      if (watched.has(wrap)) continue;
      watched.add(wrap);
      sizes.observe(wrap);
      if (wrap.firstElementChild) sizes.observe(wrap.firstElementChild);
    }
  }
  watch();
  new MutationObserver(watch).observe(document.body || document.documentElement, { childList: true, subtree: true });
})();

// Search for a flag as the pages write it, --kv-cache-memory-bytes, or a model's name,
// DeepSeek-V4-Flash. lunr's query parser splits a query at hyphens whatever the index does, and
// reads a leading "-" as "must not contain" ("--" is a parse error, and no result). On its way to
// Material's search worker, a hyphenated word becomes its parts, each required: +kv +cache
// +memory +bytes finds the pages that write the flag (and gpu_memory_utilization, split at its
// underscores like the index, the pages that write the setting). The box shows what was typed.
//
// The index (search_index.json) is fetched, and the worker builds it (lunr), when the reader goes
// to search, not on every page load: the file is a tenth of a page view's bytes besides the
// calculators' runtime, and the build takes a core for a quarter of a second on a small machine,
// while the calculator page needs both cores as Python starts. Material's request for the file
// and its setup message wait here until search opens, the search box takes the focus or a query
// is sent; the box says "Initializing search" until then, as it does while any index builds. A
// link that searches at once (?q=...) has it fetched and built at once.
(function () {
  const SETUP = 0, QUERY = 2;  // Material's search messages
  const hyphenated = /(^|\s)(\S*[-_]\S*)(?=\s|$)/g;
  const required = (match, space, word) => space + word.split(/[-_]+/).filter(Boolean).map((part) => "+" + part).join(" ");
  const post = Worker.prototype.postMessage;
  const waiting = new Map();  // worker -> its setup message
  let wanted = new URLSearchParams(location.search).has("q");  // once true, a setup passes at once
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  if (wanted) release();
  const INDEX = /\/search\/search_index\.json(?:[?#]|$)/;  // Material asks for it with an XMLHttpRequest
  const forIndex = new WeakSet();
  const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    if (INDEX.test(String(url))) forIndex.add(this);
    else forIndex.delete(this);
    return open.call(this, method, url, ...rest);
  };
  XMLHttpRequest.prototype.send = function (...args) {
    if (!wanted && forIndex.has(this)) return void released.then(() => send.apply(this, args));
    return send.apply(this, args);
  };
  function build() {
    wanted = true;
    release();
    for (const [worker, args] of waiting) post.apply(worker, args);
    waiting.clear();
  }
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message && message.type === SETUP && message.data && message.data.docs && !wanted) {
      waiting.set(this, [message, ...rest]);
      return;
    }
    if (message && message.type === QUERY && typeof message.data === "string") {
      build();
      message = { ...message, data: message.data.replace(hyphenated, required) };
    }
    return post.call(this, message, ...rest);
  };
  document.addEventListener("focusin", (event) => {
    if (event.target.matches && event.target.matches(".md-search__input")) build();
  });
  document.addEventListener("change", (event) => {
    if (event.target.id === "__search" && event.target.checked) build();  // Material's search toggle
  });
})();
