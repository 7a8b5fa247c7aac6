"""Two boxes: a start over a DGX Spark pair gated on each box's own MemAvailable, the head box
(the first reading) carrying the Ray head's processes beside its rank; the tighter box named."""

from __future__ import annotations

import pytest
from conftest import cli_json as _json

from calc.answers import report
from calc.present import cli
from calc.units import GiB, parse_size

NEEDS = 110 * GiB  # dsv4-flash-pair's rank at a 10e9 pin, as its term table prints it (79.29 + 9.31 + 13.40 + 8.00)


def _needs(r: dict[str, object]) -> int:
    return int(r["needs_bytes"])  # type: ignore[call-overload]


def test_each_box_on_its_own_reading(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["gate", "--available", "117.2 GiB, 118 GiB", "--json"], capsys)
    head, worker = r["boxes"]
    assert head["box"] == "DGX Spark (GB10) #1 (head)" and worker["box"] == "DGX Spark (GB10) #2"
    assert head["head_extra_bytes"] == 1 * GiB and worker["head_extra_bytes"] == 0  # catalog/policy.yaml gate.head_box.ray_head
    assert head["needs_bytes"] == _needs(r) + GiB and worker["needs_bytes"] == _needs(r)
    assert head["margin_bytes"] == parse_size("117.2 GiB") - GiB - _needs(r)
    assert worker["margin_bytes"] == 118 * GiB - _needs(r)
    assert r["tightest_box"] == head["box"] and r["passes"] is True


def test_the_worker_can_be_the_tighter_box(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["gate", "--available", "118 GiB, 111 GiB", "--json"], capsys)
    assert r["tightest_box"] == "DGX Spark (GB10) #2"
    assert [b["passes"] for b in r["boxes"]] == [True, True]
    r = _json(["gate", "--available", "118 GiB, 109 GiB", "--json"], capsys)
    assert [b["passes"] for b in r["boxes"]] == [True, False] and r["passes"] is False


def test_the_head_extra_refuses_what_a_rank_alone_would_pass(capsys: pytest.CaptureFixture[str]) -> None:
    """A head reading 0.5 GiB above the rank's needs passes a rank alone; with the Ray head's
    1 GiB it is refused, and the largest pin falls by that GiB."""
    base = _json(["gate", "--available", "118 GiB", "--head-extra", "0", "--json"], capsys)
    needs = _needs(base)
    head = needs + GiB // 2
    r = _json(["gate", "--available", f"{head} B, 118 GiB", "--json"], capsys)
    assert r["passes"] is False and r["boxes"][0]["passes"] is False and r["boxes"][1]["passes"] is True
    assert r["largest_pin_bytes"]["without_drafter"] == head - GiB - (needs - 10**10)
    alone = _json(["gate", "--available", f"{head} B, 118 GiB", "--head-extra", "0", "--json"], capsys)
    assert alone["passes"] is True and alone["largest_pin_bytes"]["without_drafter"] - r["largest_pin_bytes"]["without_drafter"] == GiB


def test_typed_head_extra(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["gate", "--available", "117 GiB, 118 GiB", "--head-extra", "2.5 GiB", "--json"], capsys)
    assert r["boxes"][0]["head_extra_bytes"] == parse_size("2.5 GiB")


def test_one_reading_gates_every_box_alike(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --available, or with one figure, every box is gated alike on it, as the calculator
    page does; --head-extra adds the head's processes all the same."""
    assert [b["head_extra_bytes"] for b in _json(["gate", "--json"], capsys)["boxes"]] == [0, 0]
    assert [b["head_extra_bytes"] for b in _json(["gate", "--available", "117 GiB", "--json"], capsys)["boxes"]] == [0, 0]
    typed = _json(["gate", "--available", "117 GiB", "--head-extra", "1 GiB", "--json"], capsys)
    assert [b["head_extra_bytes"] for b in typed["boxes"]] == [GiB, 0] and typed["tightest_box"] == "DGX Spark (GB10) #1 (head)"


def test_text_names_the_tighter_box(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gate", "--available", "117.2 GiB, 118 GiB"]) == 0
    out = capsys.readouterr().out
    assert "DGX Spark (GB10) #1 (head): available 117.20 GiB, less 1.00 GiB for the Ray head (GCS, dashboard), passes by 6.20 GiB" in out
    assert "DGX Spark (GB10) #2: available 118.00 GiB, passes by 8.00 GiB" in out
    assert "tighter box: DGX Spark (GB10) #1 (head)" in out
    assert report.margin_as_printed(parse_size("117.2 GiB"), (), GiB) == report.margin_as_printed(parse_size("116.2 GiB"), ())


def test_a_bad_head_extra_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gate", "--head-extra", "lots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--head-extra: found 'lots'" in err


# --- data parallel replicas in the gate ---------------------------------------------------------------


def test_each_replica_needs_a_whole_budget(capsys: pytest.CaptureFixture[str]) -> None:
    """DP 2 of the TP 2 pair: four boxes, each gated on its own reading for a whole rank's needs;
    the head box, the first, carries the Ray head; each replica has its own pool of tokens."""
    r = _json(["gate", "--data-parallel-size", "2", "--available", "117 GiB, 118 GiB, 116 GiB, 109 GiB", "--json"], capsys)
    assert r["data_parallel"] == 2 and len(r["boxes"]) == 4
    assert [b["needs_bytes"] - _needs(r) for b in r["boxes"]] == [GiB, 0, 0, 0]
    assert [b["passes"] for b in r["boxes"]] == [True, True, True, False] and r["passes"] is False
    assert r["tightest_box"] == "DGX Spark (GB10) #4 (replica 1)"
    assert r["kv_tokens_all_replicas"] == 2 * r["kv"]["tokens"] == 2 * 181777
    assert "--data-parallel-size 2" in r["flags"]
    assert any("each replica runs its ranks on boxes of its own" in n for n in r["notes"])


def test_replicas_need_a_reading_a_box(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gate", "--data-parallel-size", "2", "--available", "117 GiB, 118 GiB"]) == 2
    assert "--available: found 2 figures, expected 1 or 4 (one per box)" in capsys.readouterr().err
    assert cli.main(["gate", "--data-parallel-size", "0"]) == 2
    assert "--data-parallel-size: found 0" in capsys.readouterr().err


def test_text_of_replicas(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["gate", "--data-parallel-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "TP=2 on 4x DGX Spark (GB10), data parallel 2: 2 boxes a replica" in out
    assert "DGX Spark (GB10) #3 (replica 1): available 114.50 GiB, passes by 4.50 GiB" in out
