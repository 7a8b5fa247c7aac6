"""Host memory beside the weights and the pool (calc/engine/hostmem.py): vLLM's /dev/shm message queues
(vllm/distributed/device_communicators/shm_broadcast.py) and sleep mode's backup of the weights
(vllm/device_allocator/cumem.py), each of which a unified-memory box pays from MemAvailable."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import cli_json

from calc.answers import report
from calc.engine import hostmem
from calc.present import cli
from calc.units import GiB, InputError, MiB

ROOT = Path(__file__).resolve().parent.parent


def test_a_queue_is_its_chunks_and_their_flags_as_the_logs_print_them() -> None:
    """logs/public/81 (0.11.0, one GPU under the multiprocessing executor) prints the scheduler's
    queue, buffer_handle=(1, 16777216, 10, ...), and a worker's reply queue, (1, 10485760, 10, ...):
    (chunk + 1 + readers) x chunks bytes each."""
    text = (ROOT / "logs" / "public" / "81-v011-qwen25-vl-3b-ray-data-encoder-budget.log").read_text()
    assert "buffer_handle=(1, 16777216, 10," in text and "buffer_handle=(1, 10485760, 10," in text
    assert hostmem.Queue("scheduler broadcast", 1, 1, 16 * MiB, 10, "").bytes == (16_777_216 + 2) * 10 == 167_772_180
    assert hostmem.Queue("worker replies", 1, 1, 10 * MiB, 10, "").bytes == (10_485_760 + 2) * 10


def test_the_queues_of_a_start_on_one_box() -> None:
    """TP 4 on one box, 0.33.0: the scheduler's queue to 4 readers in 16 MiB chunks, 4 replies of
    24 MiB chunks, the TP group's broadcaster to 3 readers in 4 MiB chunks, 6 of them (the
    '(3, 4194304, 6, ...)' a TP 4 start of 0.8.5 prints, vllm-project/vllm issue 17469)."""
    q = hostmem.shm_queues(4, 1, (0, 33))
    assert [(x.name, x.count, x.readers, x.chunk_bytes, x.chunks) for x in q] == [
        ("scheduler broadcast", 1, 4, 16 * MiB, 10),
        ("worker replies", 4, 1, 24 * MiB, 10),
        ("tensor-parallel broadcaster", 1, 3, 4 * MiB, 6),
    ]
    assert hostmem.shm_bytes(q) == (16 * MiB + 5) * 10 + 4 * (24 * MiB + 2) * 10 + (4 * MiB + 4) * 6 == 1_199_571_098
    old = hostmem.shm_queues(4, 1, (0, 8))  # 0.8.x: 10 MiB chunks for both executor queues
    assert [(x.chunk_bytes, x.readers) for x in old] == [(10 * MiB, 4), (10 * MiB, 1), (4 * MiB, 3)]
    assert hostmem.shm_queues(1, 1, (0, 33)) == ()  # one GPU runs in-process
    pp = hostmem.shm_queues(2, 2, (0, 33), mq_chunk_mib=64)  # two TP groups, a bigger scheduler chunk
    assert [(x.count, x.readers, x.chunk_bytes) for x in pp] == [(1, 4, 64 * MiB), (4, 1, 24 * MiB), (2, 1, 4 * MiB)]


def test_a_small_dev_shm_is_refused_or_crashes_by_release() -> None:
    need = hostmem.shm_bytes(hostmem.shm_queues(2, 1, (0, 33)))
    assert need == (16 * MiB + 3) * 10 + 2 * (24 * MiB + 2) * 10 + (4 * MiB + 2) * 6 == 696_254_546
    said = hostmem.shm_refusal(need, 64 * MiB, (0, 33))
    # 696,254,546 B is 664.0005 MiB: the size to give is rounded up, as --shm-size 664m is still short
    assert said is not None and said.startswith("--shm-size 64 MiB is below the 665 MiB of message queues: vLLM refuses the start")
    assert hostmem.shm_refusal(need, hostmem.docker_size("664m"), (0, 33)) is not None
    assert hostmem.shm_refusal(need, hostmem.docker_size("665m"), (0, 33)) is None
    # a size just under the need prints below it, never equal to it
    almost = hostmem.shm_refusal(need, need - 1, (0, 33))
    assert almost is not None and almost.startswith("--shm-size 664 MiB is below the 665 MiB")
    said = hostmem.shm_refusal(need, 64 * MiB, (0, 26))
    assert said is not None and "bus error" in said
    assert hostmem.shm_refusal(need, GiB, (0, 33)) is None
    assert hostmem.docker_size("64m") == 64 * MiB and hostmem.docker_size("2G") == 2 * GiB and hostmem.docker_size("1 GiB") == GiB


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("2gb", 2 * GiB),  # docker's units are all powers of 1024 (go-units RAMInBytes)
        ("2GB", 2 * GiB),
        ("10 GB", 10 * GiB),
        ("1.5g", 3 * GiB // 2),
        ("512mib", 512 * MiB),
        ("4096", 4096),  # no unit: bytes
        ("0.5k", 512),
        ("1.0000000001k", 1024),  # truncated, as int64(size x unit)
        ("10e9", 10**10),  # not docker's form: read as calc reads a size
    ],
)
def test_docker_size_as_docker_reads_it(text: str, size: int) -> None:
    assert hostmem.docker_size(text) == size


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "--shm-size: found '0', which docker reads as not set (its default /dev/shm, 64 MiB); expected the size the container gets"),
        ("0m", "--shm-size: found '0m', which docker reads as not set"),
        ("9999999999999999g", "--shm-size: found '9999999999999999g', expected a size of at most 1,024 TiB"),
        ("1" * 25 + "k", "--shm-size: found '1111111111111111111111111k', 25 digits; expected a size such as 64m or 16g"),
        ("-1g", "--shm-size: found '-1g', expected a size above zero, such as 64m or 16g"),
        ("64 m b", "--shm-size: found '64 m b', expected a size as docker takes it, such as 64m, 2g or 1 GiB (units of 1024)"),
        ("lots", "--shm-size: found 'lots', expected a size as docker takes it"),
    ],
)
def test_docker_size_refusals(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        hostmem.docker_size(text)
    assert str(e.value).startswith(message), str(e.value)


def test_sleep_frees_the_pool_only_on_a_unified_box() -> None:
    one = hostmem.sleep(1, 30 * GiB, 10 * GiB)
    assert (one.host_backup_bytes, one.device_freed_bytes, one.unified_freed_bytes) == (30 * GiB, 40 * GiB, 10 * GiB)
    two = hostmem.sleep(2, 30 * GiB, 10 * GiB)
    assert (two.host_backup_bytes, two.device_freed_bytes, two.unified_freed_bytes) == (0, 40 * GiB, 40 * GiB)
    assert hostmem.sleep_note(one).endswith("MemAvailable rises by the KV pool only, 10.00 GiB, not by the weights")
    with pytest.raises(InputError, match="--sleep-level: found 3, expected 1"):
        hostmem.sleep(3, 1, 1)


def test_model_reports_the_queues_and_sleep(capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_json(["model", "models/configs/qwen3-8b/config.json", "--tp", "2", "--max-model-len", "8192", "--pool", "10 GiB",
                  "--shm-size", "64m", "--enable-sleep-mode", "--json"], capsys)  # fmt: skip
    h = r["host_memory"]
    assert h["shm_bytes"] == 696_254_546 and h["shm_size_bytes"] == 64 * MiB and h["shm_refused"] is True
    assert h["sleep"]["level"] == 1 and h["sleep"]["unified_freed_bytes"] == 10 * GiB
    assert h["sleep"]["host_backup_bytes"] == r["weights_bytes_per_rank"]
    assert any(n.startswith("--shm-size 64 MiB is below the 665 MiB") for n in r["notes"])


def test_gate_says_what_sleep_keeps_and_adds_no_queue_over_ray(capsys: pytest.CaptureFixture[str]) -> None:
    """The Spark pair (TP 2 over two boxes, Ray): no one-box queue; asleep at level 1 the weights'
    copy stays in the same memory, so MemAvailable rises by the pin alone (10e9 B = 9.31 GiB)."""
    plain = cli_json(["gate", "--json"], capsys)
    r = cli_json(["gate", "--enable-sleep-mode", "--shm-size", "64m", "--json"], capsys)
    assert r["needs_bytes"] == plain["needs_bytes"]
    assert "--enable-sleep-mode" in r["flags"]
    assert any("on this unified-memory box the copy is the same memory: MemAvailable rises by the KV pool only, 9.31 GiB" in n for n in r["notes"])
    assert any(n.startswith("/dev/shm: a start over 2 boxes (Ray) makes none") for n in r["notes"])


def test_gate_charges_the_queues_of_one_box(catalog) -> None:
    base = report.defaults(catalog)
    plain = report.start_report(catalog, base)
    more = report.start_report(catalog, replace(base, shm_bytes=696_254_546))
    assert more.needs_bytes is not None and plain.needs_bytes is not None and more.needs_bytes - plain.needs_bytes == 696_254_546
    assert [t.name for t in more.terms][-2:] == ["/dev/shm queues", "start headroom"]
    assert (plain.largest_pin_bytes.without_drafter or 0) - (more.largest_pin_bytes.without_drafter or 0) == 696_254_546


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sleep-level", "2"], "--sleep-level: found without --enable-sleep-mode"),
        (["--enable-sleep-mode", "--sleep-level", "0"], "--sleep-level: found"),
        (["--shm-size", "lots"], "--shm-size: found 'lots'"),
    ],
)
def test_bad_host_flags_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", *argv])
    err = capsys.readouterr().err
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_sleep_note_adds_up_as_printed() -> None:
    """Weights of 1.005 GiB less a byte and a pool of 2.005 GiB less a byte: to the nearest
    hundredth 1.00 and 2.00 GiB, 3.01 together. Each is restated as the lines beside the note
    print it; what sleeping frees is their sum as printed, 3.00 GiB, the sum a reader makes."""
    w, kv = GiB + 5 * GiB // 1000, 2 * GiB + 5 * GiB // 1000
    one = hostmem.sleep_note(hostmem.sleep(1, w, kv))
    assert "copies the 1.00 GiB of weights" in one and "frees 3.00 GiB of device memory" in one
    assert one.endswith("MemAvailable rises by the KV pool only, 2.00 GiB, not by the weights")
    assert hostmem.sleep_note(hostmem.sleep(2, w, kv)).startswith("sleep level 2 discards the weights and the KV pool, 3.00 GiB a rank")


def test_sleep_level_2_on_the_command_line_adds_up(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3 8B at TP 2 on an L40S at utilization 0.903: weights 7.64 GiB and a pool of 31.14 GiB a
    rank as printed; level 2 frees their sum as printed, 38.78 GiB (38.7828 GiB exactly: the sum of
    the exact figures, rounded once, is the sum of the printed ones)."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "32768", "--gpu", "l40s", "--tp", "2",
            "--gpu-memory-utilization", "0.903", "--enable-sleep-mode", "--sleep-level", "2"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "Weights per rank: 7.64 GiB" in out and "Pool 31.14 GiB" in out
    assert "sleep level 2 discards the weights and the KV pool, 38.78 GiB a rank" in out
