"""What a log's answer holds: the verdict, the phase that failed, the least changes ranked and the
whole command, as `ingest --json` gives them and as its text prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from calc.jsontext import JsonObject

VERDICTS = ("started", "refused", "killed", "unknown")
JSON_KEYS = ("verdict", "verdict_how", "failure_phase", "fixes", "command", "command_changes")  # what ingest --json adds


@dataclass(frozen=True)
class Fix:
    flag: str  # the flag as the engine takes it
    value: str | None  # None for a switch
    why: str
    check: str  # how the log's own figures check it, or why they cannot
    passes: bool | None  # True: checked to pass; False: checked not to suffice alone; None: the log cannot check it

    def to_json(self) -> JsonObject:
        return {"flag": self.flag, "value": self.value, "why": self.why, "check": self.check, "passes": self.passes}


class Phase(TypedDict):
    """The phase a start failed in, the line that says so and the engine source that prints it."""

    phase: str
    what: str
    line: int
    text: str
    engine_source: str


class CommandChange(TypedDict):
    """One flag of the whole command changed from what the log proves, and why."""

    flag: str
    value: str | None
    was: str | None
    why: str
    passes: bool | None


@dataclass(frozen=True)
class LogAnswer:
    verdict: str  # started, refused, killed or unknown
    verdict_how: str
    failure_phase: Phase | None
    fixes: tuple[Fix, ...]
    command: str | None
    command_changes: tuple[CommandChange, ...]
    command_flags: tuple[tuple[str, str | None, bool], ...] = ()  # flag, value, changed
    proven: tuple[tuple[str, str | None], ...] = ()  # every flag the log proves, before any change ("MODEL": the model)

    def to_json(self) -> JsonObject:
        p = self.failure_phase
        return {
            "verdict": self.verdict,
            "verdict_how": self.verdict_how,
            "failure_phase": None
            if p is None
            else {"phase": p["phase"], "what": p["what"], "line": p["line"], "text": p["text"], "engine_source": p["engine_source"]},
            "fixes": [f.to_json() for f in self.fixes],
            "command": self.command,
            "command_changes": [
                {"flag": c["flag"], "value": c["value"], "was": c["was"], "why": c["why"], "passes": c["passes"]} for c in self.command_changes
            ],
        }

    def text(self) -> list[str]:
        out = [f"Verdict: {self.verdict} ({self.verdict_how})"]
        if self.failure_phase:
            p = self.failure_phase
            out.append(f"Failed in: {p['phase']}, line {p['line']}: {p['what']}")
            out.append(f"  printed by {p['engine_source']}")
            if p.get("text"):
                out.append(f"  {p['text'][:200]}")
        if self.fixes:
            out.append("Least changes, ranked:")
            for i, f in enumerate(self.fixes, 1):
                said = {True: "passes", False: "not enough alone", None: "not checked"}[f.passes]
                out.append(f"  {i}. {f.flag}{' ' + f.value if f.value is not None else ''} ({said}): {f.why}")
                out.append(f"     check: {f.check}")
        if self.command:
            out.append("Command (every flag the log proves" + (", the changes marked below):" if self.command_changes else "):"))
            out.extend("  " + line for line in self.command.splitlines())
            for c in self.command_changes:
                was = f" (was {c['was']})" if c.get("was") is not None else " (added)"
                out.append(f"  changed: {c['flag']}{' ' + c['value'] if c['value'] is not None else ''}{was}")
        return out
