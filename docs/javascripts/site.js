// Material wraps each table in a div that scrolls sideways when the table is wider than the
// column. A region that scrolls must be reachable from the keyboard and named: give each one
// that scrolls a tab stop, the role "region" and the name of the section it is in.
(function () {
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
  function label() {
    const used = new Set(Array.from(document.querySelectorAll("[role=region][aria-label]"), (e) => e.getAttribute("aria-label")));
    for (const wrap of document.querySelectorAll(".md-typeset__scrollwrap, .md-typeset .calc-table")) {
      if (wrap.scrollWidth > wrap.clientWidth + 1 && !wrap.hasAttribute("tabindex")) {
        let text = "Table, scrolls sideways: " + name(wrap);
        for (let n = 2; used.has(text); n++) text = text.replace(/ \(\d+\)$/, "") + ` (${n})`;
        used.add(text);
        wrap.setAttribute("tabindex", "0");
        wrap.setAttribute("role", "region");
        wrap.setAttribute("aria-label", text);
      }
    }
  }
  // Measuring a table's width lays the page out: do it at most once a frame, just before the
  // frame lays the page out anyway, however many changes (the parser's, an edit's) came before.
  let queued = false;
  function soon() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      label();
    });
  }
  if (typeof document$ !== "undefined") document$.subscribe(soon);
  else addEventListener("DOMContentLoaded", soon);
  addEventListener("resize", soon);
  new MutationObserver(soon).observe(document.body || document.documentElement, { childList: true, subtree: true });
})();

// Search for a flag as the pages write it, --kv-cache-memory-bytes, or a model's name,
// DeepSeek-V4-Flash. lunr's query parser splits a query at hyphens whatever the index does, and
// reads a leading "-" as "must not contain" ("--" is a parse error, and no result). On its way to
// Material's search worker, a hyphenated word becomes its parts, each required: +kv +cache
// +memory +bytes finds the pages that write the flag (and gpu_memory_utilization, split at its
// underscores like the index, the pages that write the setting). The box shows what was typed.
(function () {
  const hyphenated = /(^|\s)(\S*[-_]\S*)(?=\s|$)/g;
  const required = (match, space, word) => space + word.split(/[-_]+/).filter(Boolean).map((part) => "+" + part).join(" ");
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message && message.type === 2 && typeof message.data === "string") {
      message = { ...message, data: message.data.replace(hyphenated, required) };
    }
    return post.call(this, message, ...rest);
  };
})();
