"""A calculator page's browser glue, run on Pyodide by the page's early start
(docs/calculator/early-pyodide.mjs): wires the form's input events to calc.present.html, swaps the
result sections in, and keeps the inputs in the page's address (calc/present/address.py says what
goes there). All presentation lives in calc/present/calculators/ (one module a calculator, run by
name through calc/present/html.py); this file only moves strings between the DOM and it. Exceptions stop
here: the page shows a message, never a traceback.
"""

from __future__ import annotations

from typing import Any


def found(element: Any) -> bool:
    """Whether getElementById found the element: Pyodide gives JavaScript's null as jsnull, not None."""
    try:
        from pyodide.ffi import jsnull
    except ImportError:  # outside Pyodide
        jsnull = None
    return element is not None and element is not jsnull


def raw_values(form: Any) -> dict[str, str]:
    """The form's fields as the strings a person typed; a checkbox is "on" or ""."""
    out = {}
    for element in form.elements:
        name = element.name
        if not name:
            continue
        out[name] = ("on" if element.checked else "") if element.type == "checkbox" else str(element.value)
    return out


def default_values(form: Any) -> dict[str, str]:
    """The form's fields as the build wrote them: the inputs a link leaves out."""
    out = {}
    for element in form.elements:
        name = element.name
        if not name:
            continue
        if element.type == "checkbox":
            out[name] = "on" if element.defaultChecked else ""
        elif element.tagName == "SELECT":
            chosen = [o for o in element.options if o.defaultSelected] or list(element.options)[:1]
            out[name] = str(chosen[0].value) if chosen else ""
        else:
            out[name] = str(element.defaultValue)
    return out


def set_values(form: Any, values: dict[str, str]) -> None:
    for element in form.elements:
        if element.name in values:
            if element.type == "checkbox":
                element.checked = values[element.name] == "on"
            else:
                element.value = values[element.name]


def apply_updates(document: Any, updates: dict) -> None:
    """New defaults after a deployment or box change: values, their sources, hidden and disabled fields."""
    for dom_id, value in updates.get("values", {}).items():
        element = document.getElementById(dom_id)
        if not found(element):
            continue
        if element.type == "checkbox":
            element.checked = value == "on"
        else:
            element.value = value
    for dom_id, markup in updates.get("sources", {}).items():
        element = document.getElementById(dom_id)
        if found(element):
            element.innerHTML = markup
    for dom_id, hidden in updates.get("hidden", {}).items():
        element = document.getElementById(dom_id)
        if found(element):
            element.hidden = bool(hidden)
    for dom_id, disabled in updates.get("disabled", {}).items():
        element = document.getElementById(dom_id)
        if found(element):
            element.disabled = bool(disabled)


def apply_output(document: Any, out: dict) -> None:
    """Errors beside their fields, then every result section; invalid inputs leave no result."""
    for dom_id in out["fields"]:
        message = out["errors"].get(dom_id, "")
        error = document.getElementById(dom_id + "-err")
        if found(error):
            error.textContent = message
        element = document.getElementById(dom_id)
        if found(element):
            element.setAttribute("aria-invalid", "true" if message else "false")
    for dom_id, markup in out["sections"].items():
        element = document.getElementById(dom_id)
        if found(element):
            element.innerHTML = markup
    result = document.getElementById(out["calculator"] + "-result")
    if found(result):
        result.dataset.state = "valid" if out["valid"] else "invalid"
    verdict = document.getElementById(out["calculator"] + "-verdict")
    if found(verdict):
        verdict.dataset.state = "valid" if out["valid"] else "invalid"  # no longer waiting for Python


def show_failure(document: Any, calculator: str, error: BaseException) -> None:
    """An unexpected error: a plain message and no result, so nothing stale looks valid."""
    verdict = document.getElementById(calculator + "-verdict")
    result = document.getElementById(calculator + "-result")
    if found(verdict):
        # the kind of error only: its text is Python's, not a message for a reader
        verdict.textContent = f"No result: the calculator hit an error it does not expect ({type(error).__name__}); change an input to try again."
    if found(result):
        result.innerHTML = ""
        result.dataset.state = "invalid"


def main() -> None:
    import js
    from pyodide.ffi import create_once_callable, create_proxy

    document = js.document
    js.performance.mark("calc:glue-start")  # the phases on the page's timeline, for scripts/bench.py
    status = document.getElementById("calc-status")
    try:
        from calc.catalog.loader import load_json
        from calc.present import html as calc_html

        js.performance.mark("calc:imported")
        with open("catalog.json", encoding="utf-8") as file:
            catalog = load_json(file.read())
        js.performance.mark("calc:catalog-loaded")
    except Exception as error:  # the catalog or calc/ did not load: say so, keep the build-time figures
        if found(status):
            status.textContent = f"Python could not load the calculators ({type(error).__name__}: {error}); the figures below are the build-time result."
            status.dataset.state = "failed"
        return

    def stopped() -> bool:
        """The interpreter died of a fatal error (the page's script has withdrawn every result):
        whatever still runs here is not to be trusted, so nothing is shown again."""
        return bool(getattr(js.window, "calcStopped", False))

    def recompute(calculator: str, form: Any) -> None:
        if stopped():
            return
        try:
            apply_output(document, calc_html.run(catalog, calculator, raw_values(form)).to_json())
        except Exception as error:
            show_failure(document, calculator, error)

    on_page = [c for c in calc_html.CALCULATORS if found(document.getElementById(c + "-form"))]
    linked = on_page[:1]  # the address speaks for the page's calculator (one a page)
    editing = {"now": False}  # an edit under way replaces the address it began; the next one pushes

    def write_address(calculator: str, form: Any, push: bool) -> None:
        from calc.present import address

        values = raw_values(form)
        written = address.encode(values, default_values(form), list(values))
        params = js.URLSearchParams.new()
        for name, value in written.pairs:
            params.append(name, value)
        query = str(params.toString())
        url = js.location.pathname + ("?" + query if query else "") + js.location.hash
        if url != js.location.pathname + js.location.search + js.location.hash:
            (js.history.pushState if push else js.history.replaceState)(None, "", url)
        note = document.getElementById(calculator + "-address")
        if found(note):
            note.innerHTML = address_note(calculator, written.left_out, (), values)
            note.hidden = not written.left_out

    def address_note(calculator: str, left_out: tuple[str, ...], dropped: tuple[str, ...], values: dict[str, str]) -> str:
        from calc.present import address
        from calc.present.calculators.form import dom_id

        def label(name: str) -> str:
            element = document.querySelector(f'label[for="{dom_id(calculator, name)}"]')
            return str(element.textContent) if found(element) else name

        return address.note_html([(dom_id(calculator, n), label(n), values.get(n, "")) for n in left_out], dropped)

    def restore(calculator: str, form: Any) -> None:
        """The inputs the address holds (the build's defaults for the rest), the fields that follow
        a choice (hidden, disabled, their sources) as that choice gives them, and the result."""
        from calc.present import address

        known = list(raw_values(form))
        pairs = [(str(k), str(v)) for k, v in getattr(js.Array, "from")(js.URLSearchParams.new(js.location.search).entries()).to_py()]
        choices = {str(e.name): [str(o.value) for o in e.options] for e in form.elements if e.name and e.tagName == "SELECT"}
        restored = address.decode(pairs, known, choices)
        set_values(form, {**default_values(form), **restored.values})
        for element in form.elements:
            if element.name and element.tagName == "SELECT":
                updates = calc_html.changed(catalog, calculator, element.name, raw_values(form))
                if updates:
                    apply_updates(document, {k: v for k, v in updates.items() if k != "values"})
        note = document.getElementById(calculator + "-address")
        if found(note):
            note.innerHTML = address_note(calculator, (), restored.dropped, {})
            note.hidden = not restored.dropped
        recompute(calculator, form)

    def on_edit(calculator: str, form: Any, event: Any) -> None:
        if stopped():
            return
        try:
            name = getattr(event.target, "name", "") or ""
            updates = calc_html.changed(catalog, calculator, name, raw_values(form))
            if updates:
                apply_updates(document, updates)
        except Exception as error:
            show_failure(document, calculator, error)
            return
        recompute(calculator, form)
        if calculator in linked:
            try:
                write_address(calculator, form, push=not editing["now"])
                editing["now"] = True
            except Exception as error:
                show_failure(document, calculator, error)

    def on_change(_event: Any) -> None:
        editing["now"] = False  # the edit is done: the next one gets an address of its own

    for calculator in on_page:
        form = document.getElementById(calculator + "-form")
        handler = create_proxy(lambda event, calculator=calculator, form=form: on_edit(calculator, form, event))
        form.addEventListener("input", handler)  # text, checkbox and select alike: every edit, once
        form.addEventListener("change", create_proxy(on_change))
        result = document.getElementById(calculator + "-result")
        if calculator in linked and js.location.search:
            try:
                restore(calculator, form)  # a link's inputs, over whatever the browser kept
            except Exception as error:
                show_failure(document, calculator, error)
        elif found(result) and result.dataset.state == "pending":  # edited before Python had loaded
            recompute(calculator, form)  # (the page's loading script says which): it takes effect now

    def on_history(_event: Any) -> None:
        editing["now"] = False
        for calculator in linked:
            try:
                restore(calculator, document.getElementById(calculator + "-form"))
            except Exception as error:
                show_failure(document, calculator, error)

    js.addEventListener("popstate", create_proxy(on_history))

    js.window.calcRun = create_proxy(lambda text: calc_html.run_json(catalog, str(text)))
    js.performance.mark("calc:wired")
    js.window.calcReady = True
    if found(status):
        status.textContent = "Python has loaded: every edit recomputes."
        status.dataset.state = "ready"

    def warm(names: tuple[str, ...]) -> None:
        """A calculator's module is imported when it first runs; once ready, the rest are imported
        one per task, so a first edit waits for one import at most."""
        if names:
            calc_html.module(names[0])
            js.setTimeout(create_once_callable(lambda: warm(names[1:])), 0)

    js.setTimeout(create_once_callable(lambda: warm(tuple(on_page))), 0)


def when_parsed() -> None:
    """core.js is async and may run before the page is parsed: wire the forms once they exist."""
    import js
    from pyodide.ffi import create_once_callable

    if js.document.readyState == "loading":
        js.document.addEventListener("DOMContentLoaded", create_once_callable(lambda _event: main()))
    else:
        main()


when_parsed()
