"""`calc model` takes a `vllm serve` line pasted whole: the flags that size no GPU memory are read
and set aside, those whose memory calc does not model are named beside the figures, chunked prefill
is modeled as vLLM's arg_utils.py sets the default budget by it, and a dtype calc cannot size is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.catalog.loader import load_dir
from calc.present import cli
from calc.present.cli import CATALOG_DIR

CONFIG = "models/configs/qwen3-8b/config.json"
CARD = ["--gpu", "h100-sxm", "--max-model-len", "8192"]

# what vLLM holds on an idle RTX 4090 at its start snapshot, as the catalog has it (boxes.yaml in_use_at_start)
RTX_4090_CONTEXT = int(load_dir(CATALOG_DIR).boxes["rtx-4090"]["in_use_at_start"].size)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert cli.main(["model", CONFIG, *argv, "--json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_a_pasted_serve_line_gives_the_same_figures_and_says_what_it_set_aside(capsys: pytest.CaptureFixture[str]) -> None:
    bare = _json(capsys, *CARD)
    pasted = _json(capsys, *CARD, "--host", "0.0.0.0", "--port", "8000", "--served-model-name", "qwen", "qwen3", "--trust-remote-code",
                   "--dtype", "bfloat16", "--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--reasoning-parser", "qwen3",
                   "--disable-log-requests", "--seed", "0", "--api-key", "secret", "--uvicorn-log-level", "warning")  # fmt: skip
    for key in ("available_kv_bytes", "activation_peak_bytes", "non_torch_bytes", "cuda_graph_bytes", "verdict", "kv_tokens"):
        assert pasted[key] == bare[key], key
    notes = [n for n in pasted["notes"] if isinstance(n, str) and n.startswith("read and set aside")]  # type: ignore[union-attr]
    assert len(notes) == 1
    for flag in ("--dtype bfloat16", "--host", "--port", "--served-model-name", "--trust-remote-code", "--tool-call-parser", "--api-key"):
        assert flag in notes[0], flag
    assert "secret" not in json.dumps(pasted)  # a value set aside is not repeated
    # a load format that reads the checkpoint as it is sizes nothing; one that quantizes as it loads is named
    plain = _json(capsys, *CARD, "--load-format", "safetensors", "--enable-reasoning")
    assert plain["available_kv_bytes"] == bare["available_kv_bytes"]
    assert any("--load-format" in n and "--enable-reasoning" in n for n in plain["notes"] if n.startswith("read and set aside"))  # type: ignore[union-attr]
    quantizing = _json(capsys, *CARD, "--load-format", "bitsandbytes")
    assert any(n.startswith("--load-format: read but not modeled") for n in quantizing["notes"])  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("argv", "moves"),
    [
        (["--disable-custom-all-reduce"], "custom all-reduce buffers"),
        (["--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}'], "the drafter's weights"),
        (["--runner", "pooling"], "no KV cache for generation"),
    ],
)
def test_a_flag_whose_memory_is_not_modeled_is_named_beside_the_figures(capsys: pytest.CaptureFixture[str], argv: list[str], moves: str) -> None:
    assert cli.main(["model", CONFIG, *CARD, *argv]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if line.startswith(f"Note: {argv[0]}: read but not modeled")]  # -O3 as typed
    assert len(said) == 1 and moves in said[0] and "the figures take vLLM's default for it" in said[0]


def test_chunked_prefill_off_sets_the_default_budget_as_the_release_does(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm/engine/arg_utils.py: V1 turns chunked prefill back on for every generating model before
    v0.12.0 (_set_default_args, v0.11.0), so the card's default stands (8,192 on an H100 served); from
    v0.12.0 chunked prefill off gives the larger of max_model_len and that default, and a budget below
    max_model_len is refused; on V0 --enable-chunked-prefill sets it to 2,048 (vllm/config.py SchedulerConfig)."""
    off = ["--gpu", "h100-sxm", "--no-enable-chunked-prefill"]
    old = _json(capsys, *off, "--max-model-len", "32768", "--engine-version", "0.11.0")
    assert old["max_num_batched_tokens"] == 8192 and "changes nothing before v0.12.0" in str(old["batch_source"])
    assert cli.main(["model", CONFIG, *off, "--max-model-len", "32768", "--engine-version", "0.11.0", "--max-num-batched-tokens", "4096"]) == 0
    capsys.readouterr()
    assert _json(capsys, *off, "--max-model-len", "4096", "--engine-version", "0.12.0")["max_num_batched_tokens"] == 8192
    assert _json(capsys, *off, "--max-model-len", "32768", "--engine-version", "0.30.0")["max_num_batched_tokens"] == 32768
    assert _json(capsys, "--gpu", "h100-sxm", "--max-model-len", "32768", "--engine-version", "0.30.0")["max_num_batched_tokens"] == 8192
    v0 = ["--gpu", "h100-sxm", "--max-model-len", "16384", "--engine-version", "0.7.3"]
    assert _json(capsys, *v0)["max_num_batched_tokens"] == 16384  # max(max_model_len, 2048)
    assert _json(capsys, *v0, "--enable-chunked-prefill")["max_num_batched_tokens"] == 2048
    # with chunked prefill off, vLLM refuses a budget below max_model_len (vllm/config/scheduler.py verify_max_model_len)
    assert cli.main(["model", CONFIG, *off, "--max-model-len", "32768", "--max-num-batched-tokens", "8192"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calc: error: --max-num-batched-tokens: found 8,192 beside --no-enable-chunked-prefill") and err.count("\n") == 1
    # without a card nothing reads the scheduler's defaults: set aside, said so
    assert cli.main(["model", CONFIG, "--max-model-len", "8192", "--enable-chunked-prefill"]) == 0
    assert "read and set aside, as they size no GPU memory or match calc's 16-bit model: --enable-chunked-prefill" in capsys.readouterr().out


@pytest.mark.parametrize("dtype", ["float32", "float", "fp8", "nonsense"])
def test_a_dtype_calc_cannot_size_is_refused_in_one_line(capsys: pytest.CaptureFixture[str], dtype: str) -> None:
    assert cli.main(["model", CONFIG, *CARD, "--dtype", dtype]) == 2
    err = capsys.readouterr().err
    assert err == f"calc: error: --dtype: found {dtype!r}, expected auto, half, float16 or bfloat16: calc models weights and activations " \
                  "in 16 bits (vLLM itself loads a float32 checkpoint in bfloat16 under auto)\n"  # fmt: skip


def test_a_flag_of_neither_table_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["model", CONFIG, *CARD, "--no-such-flag", "3"]) == 2
    assert "unrecognized arguments: --no-such-flag 3" in capsys.readouterr().err


def test_the_serve_line_flags_are_declared_once_and_apart_from_calcs_inputs() -> None:
    """No flag of vllmserve's tables is also one of calc's own inputs (it would be read twice), and
    every one is declared on `model`'s parser under the attribute vllmserve.dest gives."""
    from calc.present import inputs, vllmserve

    own = {name for u in inputs.COMMAND_FLAGS["model"] for name in (inputs.flag_names(u)[0], *inputs.flag_names(u)[1])}
    tables = {*vllmserve.ASIDE, *vllmserve.NOT_MODELED}
    assert not own & tables
    parser = cli.build_parser("model")
    model = next(a for a in parser._actions if a.dest == "command").choices["model"]  # type: ignore[index]
    declared = {s: a.dest for a in model._actions for s in a.option_strings}
    assert all(declared[f] == vllmserve.dest(f) for f in tables)


def test_the_graphs_captured_follow_the_sizes_given(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm/config/vllm.py _set_cudagraph_sizes (read in v0.24.0 and v0.33.0): a largest given builds the
    grid 1, 2, 4, then steps of 8 up to it (11 graphs up to 64), no decode sizes appended; sizes given
    are taken as they are. Llama 3.1 8B on an RTX 4090 under v0.21.0 (256 sequences, 2,048 tokens by
    default): 51 piecewise graphs by default, 11 up to 64, 4 for 1 2 4 8; fewer graphs, a smaller
    estimate and a larger pool, and none of it under --enforce-eager."""
    llama = ["models/configs/llama-3.1-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "8192", "--engine-version", "0.21.0", "--json"]

    def run(*argv: str) -> dict[str, object]:
        assert cli.main(["model", *llama, *argv]) == 0
        out: dict[str, object] = json.loads(capsys.readouterr().out)
        return out

    default, upto64, four = run(), run("--max-cudagraph-capture-size", "64"), run("--cudagraph-capture-sizes", "1", "2", "4", "8")
    sources = [str(r["terms"]["cuda_graph"]["source"]) for r in (default, upto64, four)]  # type: ignore[index]
    assert "PIECEWISE=51, FULL=35" in sources[0] and "PIECEWISE=11, FULL=11" in sources[1] and "PIECEWISE=4, FULL=4" in sources[2]
    graphs = [int(r["cuda_graph_bytes"]) for r in (default, upto64, four)]  # type: ignore[call-overload]
    pools = [int(r["available_kv_bytes"]) for r in (default, upto64, four)]  # type: ignore[call-overload]
    assert graphs[0] > graphs[1] > graphs[2] > 0 and pools[0] < pools[1] < pools[2]
    assert pools[1] - pools[0] == graphs[0] - graphs[1]  # the estimate alone moves
    assert run("--cudagraph-capture-sizes", "1,2,4,8")["cuda_graph_bytes"] == graphs[2]  # one comma-separated word reads alike
    for bad, said in ((["--max-cudagraph-capture-size", "0"], "--max-cudagraph-capture-size: found 0, expected at least 1"),
                      (["--cudagraph-capture-sizes", "x"], "--cudagraph-capture-sizes: found 'x', expected a whole number")):  # fmt: skip
        assert cli.main(["model", *llama, *bad]) == 2
        assert capsys.readouterr().err.startswith(f"calc: error: {said}")


def test_the_optimization_level_and_the_compilation_config_set_the_graphs_and_the_compile(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm/config/vllm.py OPTIMIZATION_LEVEL_TO_CONFIG (v0.12.0 to v0.33.0): -O0 captures no graphs and
    compiles nothing, -O1 captures piecewise graphs alone, -O2 and -O3 are the default
    (FULL_AND_PIECEWISE); --compilation-config's cudagraph_mode and mode 0 say the same, its capture
    sizes as the flags do; a key calc does not model is named, broken JSON refused in one line."""
    llama = ["models/configs/llama-3.1-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "8192", "--engine-version", "0.21.0", "--json"]

    def run(*argv: str) -> dict[str, object]:
        assert cli.main(["model", *llama, *argv]) == 0
        out: dict[str, object] = json.loads(capsys.readouterr().out)
        return out

    def graphs(r: dict[str, object]) -> str:
        source = str(r["terms"]["cuda_graph"]["source"])  # type: ignore[index]
        return source.split(": ", 1)[1].split(";")[0] if "PIECEWISE=" in source else source

    default = run()
    assert graphs(default) == "PIECEWISE=51, FULL=35" and graphs(run("-O3")) == graphs(run("-O", "2")) == graphs(default)
    assert graphs(run("-O1")) == "PIECEWISE=51, FULL=0" == graphs(run("--compilation-config", '{"cudagraph_mode": "PIECEWISE"}'))
    assert graphs(run("--compilation-config", '{"cudagraph_mode": "FULL_DECODE_ONLY"}')) == "PIECEWISE=0, FULL=35"
    none = run("-O0")
    assert none["cuda_graph_bytes"] == 0 and none["compile_block_bytes"] == 0 and int(default["compile_block_bytes"]) > 0  # type: ignore[call-overload]
    assert run("--compilation-config", '{"cudagraph_mode": "NONE", "mode": 0}')["available_kv_bytes"] == none["available_kv_bytes"]
    sized = run("-cc", '{"max_cudagraph_capture_size": 64, "pass_config": {"fuse_norm_quant": true}}')
    assert graphs(sized) == "PIECEWISE=11, FULL=11"
    assert "--compilation-config: pass_config: read but not modeled, the figures take vLLM's default for them" in sized["notes"]  # type: ignore[operator]
    assert any(str(n).startswith("--compilation-config: cudagraph_mode FULL: read but not modeled") for n in run("-cc", '{"cudagraph_mode": "FULL"}')["notes"])  # type: ignore[attr-defined]
    assert cli.main(["model", *llama, "--compilation-config", "{cudagraph_mode: PIECEWISE"]) == 2
    assert capsys.readouterr().err.startswith("calc: error: --compilation-config: found '{cudagraph_mode: PIECEWISE', expected a JSON object")


def test_qwen3_vl_deepstack_buffers_count_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The deepstack input buffers Qwen3-VL builds with the model (3 x max_num_batched_tokens x 4,096 x
    2 B for the 8B) are in the weights the command line predicts with, as in the accuracy check, and
    grow with the budget chunked prefill off gives it."""
    vl = ["models/configs/qwen3-vl-8b-instruct/config.json", "--gpu", "h100-sxm", "--max-model-len", "131072", "--engine-version", "0.33.0", "--json"]
    assert cli.main(["model", *vl]) == 0
    on = json.loads(capsys.readouterr().out)
    assert cli.main(["model", *vl, "--no-enable-chunked-prefill"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert (on["max_num_batched_tokens"], off["max_num_batched_tokens"]) == (8192, 131072)
    assert off["terms"]["weights"]["bytes"] - on["terms"]["weights"]["bytes"] == 3 * (131072 - 8192) * 4096 * 2
    assert "deepstack input buffers" in on["terms"]["weights"]["source"]


def test_a_graph_mode_that_needs_the_compile_is_resolved_as_vllm_resolves_it(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing compiled (mode 0) with a mode that needs the piecewise compile: up to v0.30.x vLLM
    overrides it to NONE (vllm/config/vllm.py, read in 0.24.0 and 0.28.0); from v0.31.0 it drops the
    piecewise part alone, FULL_AND_PIECEWISE becoming FULL_DECODE_ONLY (_normalize_piecewise_cudagraph_mode).
    A null cudagraph_mode is the level's own; mode 3 is the default and says nothing; a largest and
    sizes that disagree are refused, as vLLM refuses them."""

    def run(version: str, *argv: str) -> dict[str, object]:
        args = ["model", "models/configs/llama-3.1-8b/config.json", "--gpu", "h100-sxm", "--max-model-len", "8192", "--engine-version", version]
        assert cli.main([*args, *argv, "--json"]) == 0
        out: dict[str, object] = json.loads(capsys.readouterr().out)
        return out

    def graphs(r: dict[str, object]) -> str:
        source = str(r["terms"]["cuda_graph"]["source"])  # type: ignore[index]
        return source.split("PIECEWISE=", 1)[1].split(";")[0] if "PIECEWISE=" in source else source

    assert run("0.28.0", "-cc", '{"mode": 0}')["cuda_graph_bytes"] == 0  # NONE up to 0.30.x
    assert run("0.28.0", "-O0", "-cc", '{"cudagraph_mode": "PIECEWISE"}')["cuda_graph_bytes"] == 0
    decode_only = run("0.33.0", "-cc", '{"mode": 0}')
    assert graphs(decode_only).startswith("0, FULL=") and int(decode_only["cuda_graph_bytes"]) > 0  # type: ignore[call-overload]
    assert run("0.33.0", "-cc", '{"mode": 0, "cudagraph_mode": "PIECEWISE"}')["cuda_graph_bytes"] == 0
    default = run("0.33.0")
    assert run("0.33.0", "-cc", '{"cudagraph_mode": null}')["cuda_graph_bytes"] == default["cuda_graph_bytes"] > 0
    assert not any("not modeled" in str(n) for n in run("0.33.0", "-cc", '{"level": 3, "mode": 3}')["notes"])  # type: ignore[attr-defined]
    assert cli.main(["model", "models/configs/llama-3.1-8b/config.json", "--gpu", "h100-sxm", "--max-cudagraph-capture-size", "64",
                     "--cudagraph-capture-sizes", "1", "2", "4", "8"]) == 2  # fmt: skip
    assert capsys.readouterr().err.startswith("calc: error: --max-cudagraph-capture-size: found 64 beside capture sizes whose largest is 8")


def test_a_serve_line_is_read_as_vllms_parser_reads_it(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm/utils/argparse_utils.py FlexibleArgumentParser (v0.33.0): underscores in a flag read as
    dashes, vLLM's short spellings (-tp, -q, -dp...) as their long ones, a dotted key as one key of the
    flag's JSON, and --model's value as the config; vLLM's YAML (--config) is refused in one line."""
    from calc.present import vllmserve

    assert vllmserve.normalize(["--gpu_memory_utilization", "0.85", "-tp", "2", "--max_model_len=8192", "--model", "c.json"]) == [
        "--gpu-memory-utilization", "0.85", "--tensor-parallel-size", "2", "--max-model-len=8192", "c.json"]  # fmt: skip
    assert vllmserve.normalize(["--limit-mm-per-prompt.video", "0", "--limit-mm-per-prompt.image=1", "-cc.cudagraph_mode=NONE"]) == [
        "--vllm-typed=-cc", "--limit-mm-per-prompt", '{"video": 0, "image": 1}', "--compilation-config", '{"cudagraph_mode": "NONE"}']  # fmt: skip
    vl = "models/configs/qwen3-vl-8b-instruct/config.json"
    dotted = ["model", "--model", vl, "--gpu", "h100-sxm", "--gpu_memory_utilization", "0.85", "--max_model_len", "16384",
              "--limit-mm-per-prompt.video", "0", "-cc.cudagraph_mode=PIECEWISE", "--json"]  # fmt: skip
    plain = ["model", vl, "--gpu", "h100-sxm", "--gpu-memory-utilization", "0.85", "--max-model-len", "16384",
             "--limit-mm-per-prompt", '{"video": 0}', "-O1", "--json"]  # fmt: skip
    assert cli.main(dotted) == 0
    a = json.loads(capsys.readouterr().out)
    assert cli.main(plain) == 0
    b = json.loads(capsys.readouterr().out)
    assert (a["available_kv_bytes"], a["gpu_memory_utilization"], a["max_model_len"]) == (b["available_kv_bytes"], 0.85, 16384)
    # a config typed after a flag of several values is not taken as one of them
    assert vllmserve.normalize(["--served-model-name", "a", "b", "c.json", "--port", "8000"]) == ["c.json", "--served-model-name", "a", "b", "--port", "8000"]
    assert cli.main(["model", "--gpu", "h100-sxm", "--served-model-name", "qwen", "vl", vl, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["architecture"] == "Qwen3VLForConditionalGeneration"
    assert cli.main(["model", vl, "--gpu", "h100-sxm", "--config", "serve.yaml"]) == 2
    assert capsys.readouterr().err == ("calc: error: --config: found 'serve.yaml', expected the flags themselves: calc reads no vLLM YAML config; "
                                       "paste its keys as flags\n")  # fmt: skip


def test_a_whole_vllm_serve_command_is_taken_after_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    """`vllm serve MODEL ...` and `python -m vllm.entrypoints.openai.api_server --model X ...` pasted after
    the config: the command and the model's name are set aside and named; a model given as a config
    file or a folder holding one is the config. The '+' form appends a list and dotted keys nest
    (vllm/utils/argparse_utils.py, v0.33.0); any short flag takes a dotted key; -O beyond 3 and the
    graph flags' -O0 with vLLM's own compile mode are read as vLLM reads them."""
    from calc.present import vllmserve

    cfg = "models/configs/qwen3-8b/config.json"
    card = ["--gpu", "h100-sxm", "--max-model-len", "8192", "--json"]
    assert cli.main(["model", cfg, *card]) == 0
    bare = json.loads(capsys.readouterr().out)
    for line in (["vllm", "serve", "Qwen/Qwen3-8B", "--port", "8000"], ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B"],
                 ["--model=Qwen/Qwen3-8B", "--served-model-name", "qwen"]):  # fmt: skip
        assert cli.main(["model", cfg, *line, *card]) == 0, line
        said = json.loads(capsys.readouterr().out)
        assert said["available_kv_bytes"] == bare["available_kv_bytes"]
        assert "the model vllm serve names (Qwen/Qwen3-8B) is set aside: the config given is the one read" in said["notes"]
    assert cli.main(["model", "vllm", "serve", "models/configs/qwen3-8b", *card]) == 0  # a folder holding config.json is the config
    assert json.loads(capsys.readouterr().out)["available_kv_bytes"] == bare["available_kv_bytes"]
    assert vllmserve.normalize(["-cc.cudagraph_capture_sizes+", "1,2", "-cc.cudagraph_capture_sizes+=4", "-cc.pass_config.fuse_norm_quant", "true",
                                "-sc.method", "ngram"]) == [  # fmt: skip
        "--vllm-typed=-cc", "--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4], "pass_config": {"fuse_norm_quant": true}}',
        "--speculative-config", '{"method": "ngram"}']  # fmt: skip
    assert cli.main(["model", cfg, *card, "-cc.cudagraph_capture_sizes+", "1,2,4"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert cli.main(["model", cfg, *card, "--cudagraph-capture-sizes", "1", "2", "4"]) == 0
    assert listed["cuda_graph_bytes"] == json.loads(capsys.readouterr().out)["cuda_graph_bytes"] < bare["cuda_graph_bytes"]
    assert cli.main(["model", cfg, *card, "-O", "4"]) == 2
    assert capsys.readouterr().err.startswith("calc: error: -O: found '4', expected an optimization level, 0, 1, 2 or 3")
    assert cli.main(["model", cfg, *card, "-O0", "-cc.mode", "3", "-cc.cudagraph_mode", "FULL_AND_PIECEWISE"]) == 0
    assert json.loads(capsys.readouterr().out)["cuda_graph_bytes"] == bare["cuda_graph_bytes"]  # vLLM's own compile kept over the level's


def test_a_pool_pinned_on_a_discrete_card_is_checked_against_the_card(capsys: pytest.CaptureFixture[str]) -> None:
    """--kv-cache-memory-bytes beside a discrete card: vLLM 0.11.0 on takes the pin as the pool and sizes
    nothing from the utilization (vllm/v1/worker/gpu_worker.py determine_available_memory), so the
    answer is whether the pin and what runs beside it fit the card: Qwen3 8B
    (15.27 GiB of weights) on an RTX 4090 (23.68 GiB) holds a 5.59 GiB pin, not a 7.45 GiB one, beside
    vLLM's CUDA context, the peak activation, non-torch memory, graphs and vLLM's 150 MiB; the terms
    are the prediction's."""
    cfg = "models/configs/qwen3-8b/config.json"
    argv = ["model", cfg, "--gpu", "rtx-4090", "--max-model-len", "8192", "--engine-version", "0.21.0"]
    assert cli.main([*argv, "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    for pin, fits in (("6e9", True), ("8e9", False)):
        assert cli.main([*argv, "--kv-cache-memory-bytes", pin, "--json"]) == 0
        c = json.loads(capsys.readouterr().out)["card_pin"]
        assert c["fits"] is fits and c["pin_bytes"] == int(float(pin)) and c["buffer_bytes"] == 150 * 2**20
        assert (c["weights_bytes"], c["activation_peak_bytes"], c["non_torch_bytes"], c["cuda_graph_bytes"]) == (
            predicted["terms"]["weights"]["bytes"], predicted["activation_peak_bytes"], predicted["non_torch_bytes"], predicted["cuda_graph_bytes"])  # fmt: skip
        assert c["held_bytes"] == c["total_bytes"] - c["free_at_start_bytes"] == RTX_4090_CONTEXT  # an idle 4090: vLLM's own context
        assert c["needs_bytes"] == (c["held_bytes"] + c["weights_bytes"] + c["activation_peak_bytes"] + c["non_torch_bytes"] + c["cuda_graph_bytes"]
                                    + c["buffer_bytes"] + c["pin_bytes"])  # fmt: skip
        assert c["start_check_passes"] is True and c["requested_bytes"] == predicted["requested_bytes"]
        assert c["margin_bytes"] == c["total_bytes"] - c["needs_bytes"] == predicted["total_memory_bytes"] - c["needs_bytes"]
    assert cli.main([*argv, "--kv-cache-memory-bytes", "10e9"]) == 0
    said = capsys.readouterr().out
    assert "GiB over the card: CUDA out of memory once the pool is allocated (at its allocation or the warm-up after it); the largest pin" in said
    # before v0.20.0 vLLM estimates no graphs but still captures them beside the pool: counted all the same
    assert cli.main([*argv[:-1], "0.15.0", "--kv-cache-memory-bytes", "6e9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["card_pin"]["cuda_graph_bytes"] > 0
    # what other processes hold comes off the card beside the pin, and the utilization must still pass the check at start
    assert cli.main([*argv, "--kv-cache-memory-bytes", "4e9", "--in-use", "3GiB", "--json"]) == 0
    held = json.loads(capsys.readouterr().out)["card_pin"]
    assert held["held_bytes"] == RTX_4090_CONTEXT + 3 * 2**30 and held["fits"] is False and held["start_check_passes"] is False
    assert cli.main([*argv, "--kv-cache-memory-bytes", "2e9", "--in-use", "3GiB", "--gpu-memory-utilization", "0.5", "--json"]) == 0
    low = json.loads(capsys.readouterr().out)["card_pin"]
    assert low["fits"] is True and low["start_check_passes"] is True
    assert cli.main([*argv, "--kv-cache-memory-bytes", "0"]) == 2  # vLLM reads 0 as no pin
    assert capsys.readouterr().err.startswith("calc: error: --kv-cache-memory-bytes: found 0 beside a card, expected a pool above zero")


def test_language_model_only_leaves_the_tower_unbuilt(capsys: pytest.CaptureFixture[str]) -> None:
    """--language-model-only sets every modality's limit to 0 (vllm/config/multimodal.py, read in 0.28.0):
    no tower, no encoder profile, as --limit-mm-per-prompt with zeros gives it."""
    vl = ["model", "models/configs/qwen3-vl-8b-instruct/config.json", "--gpu", "h100-sxm", "--max-model-len", "16384", "--json"]
    assert cli.main([*vl, "--language-model-only"]) == 0
    text_only = json.loads(capsys.readouterr().out)
    assert cli.main([*vl, "--limit-mm-per-prompt", '{"image": 0, "video": 0}']) == 0
    zeros = json.loads(capsys.readouterr().out)
    assert cli.main(vl) == 0
    full = json.loads(capsys.readouterr().out)
    assert text_only["available_kv_bytes"] == zeros["available_kv_bytes"] > full["available_kv_bytes"]
    # it wins over a limit given, before or after it (vllm/config/multimodal.py get_limit_per_prompt)
    for extra in (["--limit-mm-per-prompt", '{"image": 2}', "--language-model-only"], ["--language-model-only", "--limit-mm-per-prompt.image", "2"]):
        assert cli.main([*vl, *extra]) == 0
        assert json.loads(capsys.readouterr().out)["available_kv_bytes"] == text_only["available_kv_bytes"]


def test_qwen3_vl_deepstack_buffers_sit_on_the_first_stage_under_pipeline_parallel() -> None:
    """Under pipeline parallel the deepstack buffers are built beside the tower, on the first stage,
    whose predicted weights they join (3 x max_num_batched_tokens x 4,096 x 2 B for the 8B)."""
    import json as _json
    from pathlib import Path

    from calc.engine import hfconfig, predict

    config = _json.loads(Path("models/configs/qwen3-vl-8b-instruct/config.json").read_text())
    shape = hfconfig.shape(config, "q")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "h100-sxm"))
    start = predict.Start(pp=2, max_model_len=16384, engine_version="0.33.0")
    p = predict.predict(shape, card, start, 0, predict.Given())
    q = predict.predict(shape, card, start, 0, predict.Given(rounding=False))  # weights as printed: nothing added
    assert p.stages[0].weights_bytes - q.stages[0].weights_bytes == 3 * p.max_num_batched_tokens * 4096 * 2
    assert p.stages[1].weights_bytes == q.stages[1].weights_bytes


def test_graph_settings_beside_a_unified_box_are_said_to_be_set_aside(capsys: pytest.CaptureFixture[str]) -> None:
    """On the DGX Spark the pin is the pool and the gate reads MemAvailable: -O, chunked prefill and the
    capture sizes move nothing there, and the answer says they were set aside rather than dropping them."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "dgx-spark", "--max-model-len", "8192", "--kv-cache-memory-bytes", "10e9",
            "--overhead", "6GiB", "-O1", "--no-enable-chunked-prefill", "--max-cudagraph-capture-size", "64"]  # fmt: skip
    assert cli.main(argv) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Note: read and set aside")]
    assert len(said) == 1 and all(f in said[0] for f in ("-O", "--no-enable-chunked-prefill", "--max-cudagraph-capture-size"))


def test_a_flag_the_release_given_lacks_is_refused_as_vllm_refuses_it(capsys: pytest.CaptureFixture[str]) -> None:
    """--language-model-only is first in 0.17.0's vllm/engine/arg_utils.py (0.16.0's, the only 0.16
    release, has none); --cudagraph-capture-sizes first in 0.11.1's (0.11.0's has none), -cc in 0.12.0's
    (0.11.2's has none), -ep in 0.14.0's; --cuda-graph-sizes is gone from 0.13.0's. Outside, vLLM's own
    argparse refuses the line (unrecognized arguments), and so does calc, in one line: the flag as
    typed, the release given, the first release that has it (or the first that has it no longer)."""
    vl = "models/configs/qwen3-vl-8b-instruct/config.json"
    assert cli.main(["model", vl, "--gpu", "h100-sxm", "--language-model-only", "--engine-version", "0.16.0"]) == 2
    assert capsys.readouterr().err == (
        "calc: error: --language-model-only: found with vLLM 0.16.0, expected vLLM 0.17.0 or later, the first release that has it "
        "(vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py): vLLM 0.16.0 refuses the line (unrecognized arguments)\n"
    )
    assert cli.main(["model", vl, "--gpu", "h100-sxm", "--language_model_only", "--engine-version", "0.17.0"]) == 0
    capsys.readouterr()
    llama = ["model", "models/configs/llama-3.1-8b/config.json", "--gpu", "h100-sxm"]
    for typed, version, expected in (("-cc.cudagraph_mode=NONE", "0.11.2", "vLLM 0.12.0 or later, the first release that has it"),
                                     ("--cudagraph_capture_sizes=8", "0.11.0", "vLLM 0.11.1 or later, the first release that has it"),
                                     ("-ep", "0.13.0", "vLLM 0.14.0 or later, the first release that has it"),
                                     ("--cuda-graph-sizes=8", "0.13.0", "a release before vLLM 0.13.0, the first that has it no longer"),
                                     # first in 0.9.0 (SchedulerConfig.cuda_graph_sizes); 0.8.5's arg_utils.py has no such flag
                                     ("--cuda-graph-sizes=8", "0.8.5", "vLLM 0.9.0 or later, the first release that has it")):  # fmt: skip
        assert cli.main([*llama, typed, "--engine-version", version]) == 2, typed
        flag = typed.partition("=")[0].partition(".")[0].replace("_", "-")
        assert capsys.readouterr().err.startswith(f"calc: error: {flag}: found with vLLM {version}, expected {expected} (vllm/engine/"), typed
    assert cli.main([*llama, "--cuda-graph-sizes", "8"]) == 2  # no version: the newest rules, which have no such flag
    assert "found with vLLM 0.33.0 (the newest rules read: no --engine-version)" in capsys.readouterr().err
    for typed, version in (("-cc.cudagraph_mode=NONE", "0.12.0"), ("--cudagraph-capture-sizes=8", "0.11.1"), ("--cuda-graph-sizes=8", "0.12.0"),
                           ("--cuda-graph-sizes=8", "0.11.0"), ("--cuda-graph-sizes=8", "0.9.0")):  # fmt: skip
        assert cli.main([*llama, typed, "--engine-version", version]) == 0, typed
        capsys.readouterr()


def test_cuda_graph_sizes_are_read_as_the_release_reads_them() -> None:
    """vLLM 0.11.0 (vllm/config/scheduler.py SchedulerConfig.cuda_graph_sizes, vllm/config/__init__.py
    _set_cudagraph_sizes): one value is the largest size, the list [1, 2, 4] + range(8, N + 1, 8),
    several values the sizes themselves. 0.11.1, 0.11.2 and 0.12.0 (vllm/engine/arg_utils.py): the
    flag is --cudagraph-capture-sizes' deprecated spelling, every value a size. The 512 list is the 67 graphs
    gpt-oss's override counts from (model_executor/models/config.py, 0.11.0: 'from 67 to 81')."""
    from calc.present import vllmserve

    assert vllmserve.compilation((0, 11), sizes=["64"]).sizes == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
    assert vllmserve.compilation((0, 11), sizes=["1"]).sizes == (1, 2, 4)
    assert len(vllmserve.compilation((0, 11), sizes=["512"]).sizes or ()) == 67
    assert vllmserve.compilation((0, 11), sizes=["128", "1", "2"]).sizes == (1, 2, 128)
    assert vllmserve.compilation((0, 11, 1), sizes=["64"]).sizes == (64,)  # 0.11.1 already reads it as 0.12.0 does
    assert vllmserve.compilation((0, 12), sizes=["64"]).sizes == (64,)
    assert vllmserve.compilation((0, 12), sizes=["1,2,4,8"]).sizes == (1, 2, 4, 8)


def test_a_model_folder_is_the_config_only_where_it_holds_one(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The model vllm serve names and a value moved to the front (_config_first) read by one rule: a
    .json path or a folder holding a config.json is the config; a folder without one, given as the
    model, is refused in one line naming it; a name that is no folder is set aside."""
    from calc.present import vllmserve

    empty = str(tmp_path)
    cfg = "models/configs/qwen3-8b/config.json"
    for line, where in ((["vllm", "serve", empty], "vllm serve"), ([cfg, "--model", empty], "--model"), ([cfg, f"--model={empty}"], "--model")):
        assert cli.main(["model", *line, "--gpu", "h100-sxm"]) == 2
        assert capsys.readouterr().err == (f"calc: error: {where} {empty}: found a folder without a config.json, expected the model's "
                                           "config.json or the checkpoint folder holding it\n")  # fmt: skip
    assert vllmserve.normalize(["vllm", "serve", "Qwen/Qwen3-8B"]) == ["--served-model-tag", "Qwen/Qwen3-8B"]
    assert vllmserve.normalize(["vllm", "serve", "models/configs/qwen3-8b"]) == ["models/configs/qwen3-8b"]
    # a folder without a config.json after a flag of several values stays its value, as the model's name would
    assert vllmserve.normalize([cfg, "--served-model-name", "a", empty]) == [cfg, "--served-model-name", "a", empty]
    assert vllmserve.normalize(["--served-model-name", "a", "models/configs/qwen3-8b"]) == ["models/configs/qwen3-8b", "--served-model-name", "a"]
