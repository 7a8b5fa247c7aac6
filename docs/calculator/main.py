"""The calculator page's browser glue, run by PyScript: wires the forms' input events to calc.html
and swaps the result sections in. All presentation lives in calc/calculators/ (one module a
calculator, run by name through calc/html.py); this file only moves strings between the DOM and it.
Exceptions stop here: the page shows a message, never a traceback.
"""

from __future__ import annotations

from typing import Any


def raw_values(form: Any) -> dict[str, str]:
    """The form's fields as the strings a person typed; a checkbox is "on" or ""."""
    out = {}
    for element in form.elements:
        name = element.name
        if not name:
            continue
        out[name] = ("on" if element.checked else "") if element.type == "checkbox" else str(element.value)
    return out


def apply_updates(document: Any, updates: dict) -> None:
    """New defaults after a deployment or box change: values, their sources, hidden and disabled fields."""
    for dom_id, value in updates.get("values", {}).items():
        element = document.getElementById(dom_id)
        if element is None:
            continue
        if element.type == "checkbox":
            element.checked = value == "on"
        else:
            element.value = value
    for dom_id, markup in updates.get("sources", {}).items():
        element = document.getElementById(dom_id)
        if element is not None:
            element.innerHTML = markup
    for dom_id, hidden in updates.get("hidden", {}).items():
        element = document.getElementById(dom_id)
        if element is not None:
            element.hidden = bool(hidden)
    for dom_id, disabled in updates.get("disabled", {}).items():
        element = document.getElementById(dom_id)
        if element is not None:
            element.disabled = bool(disabled)


def apply_output(document: Any, out: dict) -> None:
    """Errors beside their fields, then every result section; invalid inputs leave no result."""
    for dom_id in out["fields"]:
        message = out["errors"].get(dom_id, "")
        error = document.getElementById(dom_id + "-err")
        if error is not None:
            error.textContent = message
        element = document.getElementById(dom_id)
        if element is not None:
            element.setAttribute("aria-invalid", "true" if message else "false")
    for dom_id, markup in out["sections"].items():
        element = document.getElementById(dom_id)
        if element is not None:
            element.innerHTML = markup
    result = document.getElementById(out["calculator"] + "-result")
    if result is not None:
        result.dataset.state = "valid" if out["valid"] else "invalid"
    verdict = document.getElementById(out["calculator"] + "-verdict")
    if verdict is not None:
        verdict.dataset.state = "valid" if out["valid"] else "invalid"  # no longer waiting for Python


def show_failure(document: Any, calculator: str, error: BaseException) -> None:
    """An unexpected error: a plain message and no result, so nothing stale looks valid."""
    verdict = document.getElementById(calculator + "-verdict")
    result = document.getElementById(calculator + "-result")
    if verdict is not None:
        # the kind of error only: its text is Python's, not a message for a reader
        verdict.textContent = f"No result: the calculator hit an error it does not expect ({type(error).__name__}); change an input to try again."
    if result is not None:
        result.innerHTML = ""
        result.dataset.state = "invalid"


def main() -> None:
    import js
    from pyodide.ffi import create_once_callable, create_proxy

    document = js.document
    status = document.getElementById("calc-status")
    try:
        from calc import html as calc_html
        from calc.catalog import load_json

        with open("catalog.json", encoding="utf-8") as file:
            catalog = load_json(file.read())
    except Exception as error:  # the catalog or calc/ did not load: say so, keep the build-time figures
        if status is not None:
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

    for calculator in calc_html.CALCULATORS:
        form = document.getElementById(calculator + "-form")
        if form is None:
            continue
        handler = create_proxy(lambda event, calculator=calculator, form=form: on_edit(calculator, form, event))
        form.addEventListener("input", handler)  # text, checkbox and select alike: every edit, once
        result = document.getElementById(calculator + "-result")
        if result is not None and result.dataset.state == "pending":  # edited before Python had loaded
            recompute(calculator, form)  # (the page's loading script says which): it takes effect now

    js.window.calcRun = create_proxy(lambda text: calc_html.run_json(catalog, str(text)))
    js.window.calcReady = True
    if status is not None:
        status.textContent = "Python has loaded: every edit recomputes."
        status.dataset.state = "ready"

    def warm(names: tuple[str, ...]) -> None:
        """A calculator's module is imported when it first runs; once ready, the rest are imported
        one per task, so a first edit waits for one import at most."""
        if names:
            calc_html.module(names[0])
            js.setTimeout(create_once_callable(lambda: warm(names[1:])), 0)

    js.setTimeout(create_once_callable(lambda: warm(calc_html.CALCULATORS)), 0)


def when_parsed() -> None:
    """core.js is async and may run before the page is parsed: wire the forms once they exist."""
    import js
    from pyodide.ffi import create_once_callable

    if js.document.readyState == "loading":
        js.document.addEventListener("DOMContentLoaded", create_once_callable(lambda _event: main()))
    else:
        main()


when_parsed()
