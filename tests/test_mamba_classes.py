"""Models of state-space layers alone, read by vLLM's own model code: Mamba-1 (MambaForCausalLM, mamba.py,
and FalconMambaForCausalLM, which the registry maps to the same class) and Mamba-2 (Mamba2ForCausalLM,
mamba2.py). No layer has attention: the pool holds one state a request (two with prefix caching in
"align" mode), in blocks of max_model_len tokens without prefix caching (MambaModelConfig), so vLLM
prints the concurrency x max_model_len as its tokens.

Falcon3-Mamba-7B-Base's and Mambaoutai's configs are shipped (models/configs/SOURCES.yaml: the Hub's
files); no Mamba-2 config of its maker was found whole, so Mamba2ForCausalLM is unchecked and read from
the Hugging Face conversion of Codestral Mamba (tests/data/configs/mamba-codestral-7b-v0.1)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import cli_json, config_path, config_shape, parameters

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout
from calc.engine.predict import graphs
from calc.units import InputError

FALCON, OUTAI, CODESTRAL = "falcon3-mamba-7b-base", "mambaoutai", "mamba-codestral-7b-v0.1"
GIB = 2**30


def state(name: str, tp: int = 1, release: str | None = None, **settings: object) -> int:
    """One request's pool bytes on a rank without prefix caching (one state), as the layout sizes it."""
    s = kvlayout.Settings(tp=tp, mamba_cache_mode="none", **settings)  # type: ignore[arg-type]
    return kvlayout.request(config_shape(name), s, 4096, kvlayout.version(release)).bytes_per_request


def test_counts_meet_the_published_sizes() -> None:
    """Codestral Mamba: 7,285,403,648 parameters (https://ai-tldr.dev/models/codestral-mamba/).
    Falcon3-Mamba-7B-Base: three bfloat16 shards of 4.96, 4.99 and 4.6 GB (the Hub's tree at f8b387e).
    Mambaoutai: 1.6B, its name."""
    assert parameters(config_shape(CODESTRAL)) == 7_285_403_648
    falcon = parameters(config_shape(FALCON))
    assert falcon == 7_272_665_088 and abs(2 * falcon - 14.55e9) < 0.01e9
    assert parameters(config_shape(OUTAI)) == 1_622_361_216


def test_mamba1_layer_by_hand() -> None:
    """A Mamba-1 layer (mamba_mixer.py, use_rms_norm False or without weight): in_proj 2 x inner x hidden,
    conv inner x kernel and its bias, x_proj (dt_rank + 2 x state) x inner, dt_proj inner x dt_rank and
    its bias, A inner x state, D inner, out_proj hidden x inner; one RMSNorm; no MLP. Falcon3: untied head."""
    h, i, n, r, v = 4096, 8192, 16, 256, 65024
    layer = 2 * i * h + i * 4 + i + (r + 2 * n) * i + i * r + i + i * n + i + h * i + h
    assert parameters(config_shape(FALCON)) == 64 * layer + 2 * v * h + h


def test_tied_head_and_defaults() -> None:
    """MambaConfig ties the head and leaves out biases by default (transformers 5.5.3); a config that
    leaves them out takes them, and says so."""
    data = json.loads(config_path(OUTAI).read_text())
    for key in ("tie_word_embeddings", "use_bias", "use_conv_bias", "time_step_rank"):
        del data[key]
    s = hfconfig.shape(data, "mamba.json")
    m = s.part(hfconfig.Mamba1Mixer)
    assert s.tie_embeddings and m.dt_rank == 168 and m.conv_bias and not m.bias
    assert "MambaConfig's defaults" in s.defaults[0]
    assert parameters(s) == parameters(config_shape(OUTAI)) - 65024 * 2688


def test_state_a_request_by_hand() -> None:
    """mamba_utils.py: Mamba-1 conv (kernel - 1) x inner / TP and temporal inner / TP x state; Mamba-2
    conv (kernel - 1) x (inner + 2 x groups x state) / TP and temporal heads / TP x head_dim x state; in
    bfloat16, over every layer."""
    assert state(FALCON) == 64 * (3 * 8192 * 2 + 8192 * 16 * 2)
    assert state(FALCON, tp=2) == 64 * (3 * 4096 * 2 + 4096 * 16 * 2)
    assert state(CODESTRAL) == 64 * (3 * (8192 + 2 * 8 * 128) * 2 + 128 * 64 * 128 * 2)
    assert state(CODESTRAL, tp=8) == 64 * (3 * (8192 + 2 * 8 * 128) // 8 * 2 + 16 * 64 * 128 * 2)
    assert kvlayout.request(config_shape(CODESTRAL), kvlayout.Settings(mamba_cache_mode="none"), 1, kvlayout.version(None)).bytes_per_token == 0


@pytest.mark.parametrize("release", ["0.10.2", "0.13.0", "0.19.0", "0.26.0", "0.28.0", None])
def test_prefix_caching_is_off_by_default_in_every_release(release: str | None) -> None:
    v = kvlayout.version(release)
    assert kvlayout.mamba_cache_mode(config_shape(CODESTRAL), v) == "none"
    assert not kvlayout.prefix_caching_on(config_shape(FALCON), v)


def test_the_block_is_max_model_len_and_the_tokens_follow() -> None:
    """Without prefix caching a state's block is max_model_len: up to 0.20.0 vLLM prints the blocks x that
    block, from 0.20.1 int(concurrency x max_model_len); the two agree for one state a request."""
    s = config_shape(CODESTRAL)
    one = state(CODESTRAL)
    for release in ("0.19.0", "0.26.0"):
        v = kvlayout.version(release)
        p = kvlayout.pool(s, kvlayout.Settings(mamba_cache_mode="none"), 32768, 10 * one + 5, v)
        assert (p.blocks, p.tokens, p.concurrency) == (10, 327680, 10)
        assert kvlayout.layout(kvlayout.layer_specs(s, kvlayout.Settings(mamba_cache_mode="none"), v, 32768)).min_block_size == 32768


def test_prefix_caching_holds_two_states_and_mamba2_a_checkpoint() -> None:
    """With --enable-prefix-caching the block is the cache's (16) and "align" keeps two states; from 0.32.0
    a Mamba-2 mixer a prefill checkpoint more (mamba_mixer2.py), a Mamba-1 mixer none."""
    align = kvlayout.Settings(mamba_cache_mode="align")
    for name, pages in ((CODESTRAL, 3), (FALCON, 2)):
        req = kvlayout.request(config_shape(name), align, 32768, kvlayout.version(None))
        assert req.layout.min_block_size == 16 and req.pages_per_request == pages
    assert kvlayout.request(config_shape(CODESTRAL), align, 32768, kvlayout.version("0.28.0")).pages_per_request == 2
    mode = kvlayout.mamba_cache_mode(config_shape(CODESTRAL), kvlayout.version("0.26.0"), True)
    assert mode == "all"  # Mamba2ForCausalLM supports mamba prefix caching, 0.15.0 to 0.27.1


def test_any_length_fits_once_one_state_does() -> None:
    s, v = config_shape(FALCON), kvlayout.version("0.26.0")
    one = state(FALCON, release="0.26.0")
    settings = kvlayout.Settings(mamba_cache_mode="none")
    assert kvlayout.largest_max_model_len(s, settings, one, v) == 10**8
    assert kvlayout.largest_max_model_len(s, settings, one - 1, v) == 0


def test_refused_input() -> None:
    with pytest.raises(ValueError, match="V0 engine"):
        state(CODESTRAL, release="0.10.1.1")
    with pytest.raises(hfconfig.ConfigError, match="n_groups"):
        state(CODESTRAL, tp=16)
    with pytest.raises(hfconfig.ConfigError, match="intermediate_size"):
        state(OUTAI, tp=5)
    data = json.loads(config_path(CODESTRAL).read_text())
    for key in ("n_groups", "tie_word_embeddings", "use_bias"):
        with pytest.raises(hfconfig.ConfigError, match=key):
            hfconfig.shape({k: val for k, val in data.items() if k != key}, "mamba2.json")
    with pytest.raises(hfconfig.ConfigError, match="expand"):
        hfconfig.shape({**data, "expand": 4}, "mamba2.json")
    falcon = json.loads(config_path(FALCON).read_text())
    with pytest.raises(hfconfig.ConfigError, match="intermediate_size"):
        hfconfig.shape({**falcon, "expand": 16}, "falcon-mamba.json")


def test_model_report_and_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    r = modeled.model_report(modeled.ModelInputs(config_path(CODESTRAL).read_text(), "codestral.json", max_model_len=2048, pool=GIB))
    assert r.kv_bytes_per_token == 0 and r.block_size == 2048 and r.max_concurrency == Fraction(GIB // state(CODESTRAL))
    assert any(n.startswith("Mamba2ForCausalLM is read by vLLM's model code, but no real public") for n in r.notes)
    assert any("off by default for attention-free models" in n for n in r.notes)
    out = cli_json(["model", str(config_path(FALCON)), "--pool", "1GiB", "--engine-version", "0.19.0", "--json"], capsys)
    blocks = GIB // state(FALCON)
    assert (out["max_model_len"], out["kv_blocks"], out["kv_tokens"]) == (2048, blocks, blocks * 2048)
    with pytest.raises(InputError, match="V0 engine"):
        modeled.model_report(modeled.ModelInputs(config_path(OUTAI).read_text(), "outai.json", max_model_len=2048, engine_version="0.10.1"))


def test_no_attention_backend_buffers() -> None:
    """Without attention no FlashAttention 3 split buffers or FlashInfer workspace are captured with the
    graphs; Jamba, which has attention, keeps FlashAttention 3's."""
    fa3 = graphs.Capture(fa3=True)
    assert graphs.full_graph_buffers(config_shape(CODESTRAL), fa3, 1, 512, 8192, (0, 33)) == (0, "")
    assert graphs.full_graph_buffers(config_shape("jamba-v0.1"), fa3, 1, 512, 8192, (0, 33))[0] > 0
