"""KV cache per request, laid out by vLLM's own rules, from a config.json.

Read from vLLM's released sources (the sdists on PyPI; file and version named with each rule):
- vllm/v1/kv_cache_interface.py (0.24.0; the same at commit 001cabc1be16): a page is block_size
  tokens of one layer; full attention holds 2 x num_kv_heads x head_size x dtype per token,
  num_kv_heads already divided by the ranks and never below one; MLA holds one latent
  (kv_lora_rank + qk_rope_head_dim) per token, not divided, and fp8_ds_mla packs 656 B; nvfp4
  packs head_size/2 + head_size/16 bytes a head; a full-attention request holds
  cdiv(max_model_len, block_size) pages (max_model_len first divided by the decode-context-
  parallel size); a sliding-window request holds cdiv(min(window - 1 + budget, max_model_len),
  block_size) + 1 pages; a mamba / linear-attention request holds one state page ("none"), two
  in "align" mode, plus one per speculative token; in "all" mode cdiv(max_model_len,
  block_size) pages, plus one per speculative token (MambaSpec.max_memory_usage_bytes, 0.27.1);
  from 0.32.0 a mamba2 layer adds one prefill checkpoint page in "align" mode
  (num_prefill_checkpoint_blocks=1, mamba_mixer2.py 0.32.0: three pages), and from 0.33.0 so
  does a Qwen gated-delta layer whose prefill runs on FlashInfer (qwen_gdn_linear_attn.py).
  Before 0.13 one page whatever prefix caching (0.11.0, MambaSpec.max_memory_usage_bytes).
- The sliding window's budget is max_num_batched_tokens up to 0.25.x; from 0.26.0 it is
  max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens (vllm/config/vllm.py,
  0.26.0 and 0.29.0), two batches with async scheduling, which is on by default from 0.14.0
  (vllm/config/scheduler.py: async_scheduling defaults to None, which vllm/config/vllm.py turns
  on unless pipeline parallelism, an unsupported drafter or the executor rule it out, in 0.14.0,
  0.18.1, 0.20.0 and 0.26.0 alike; 0.13.0 defaults to False).
- A layer that reads another layer's cache (Gemma 3n's and Gemma 4's last num_kv_shared_layers: Attention
  with a kv_sharing_target_layer_name) holds none: get_kv_cache_spec skips it (vllm/v1/worker/gpu_model_runner.py,
  0.10.1.1 to 0.33.0), so it joins no group and its tokens cost nothing.
- Chunked local attention (Llama 4's RoPE layers; vllm/v1/kv_cache_interface.py
  ChunkedLocalAttentionSpec): a request holds cdiv(min(attention_chunk_size + budget, max_model_len),
  block_size) pages, the budget as a sliding window's (max_num_batched_tokens up to 0.25.x,
  max_in_flight_tokens from 0.26.0), no extra page. vLLM keeps that spec only with the hybrid KV
  cache manager, which it turns off for a model with attention_chunk_size unless
  VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE is set (vllm/config/vllm.py, and
  vllm/config/__init__.py before 0.13); off, every such layer becomes a FullAttentionSpec
  (kv_cache_utils.py unify_hybrid_kv_cache_specs) of the whole length, one group of all layers. The
  variable defaults to 0 in 0.10.1.1, 0.10.2, 0.11.0 and 0.13.0 (vllm/envs.py: chunked layers as full
  attention) and to 1 from 0.19.0 to 0.33.0 (their own spec); releases between, and before 0.10,
  were not read and are refused.
- Which mode a hybrid runs in. Prefix caching is off by default for hybrid models up to 0.27.1
  (vllm/config/model.py is_prefix_caching_supported returns False for them up to 0.25.1;
  vllm/engine/arg_utils.py 0.26.0 and 0.27.1 add `and not model_config.is_hybrid`) and on from
  0.28.0; without it the mode is "none". With it, vllm/model_executor/models/config.py
  (MambaModelConfig, 0.15.0 to 0.27.1) picks "all" for the models that support mamba prefix
  caching (Nemotron-H, Jamba, Falcon-H1, Zamba2, Granite hybrids, Mamba, Mamba2) and "align" for
  the rest (Qwen3-Next, Qwen3.5); from 0.28.0 "align" for every model. Qwen3.5 takes
  mamba_ssm_dtype from its config for the recurrent state (the multimodal classes from their
  first release; the text-only Qwen3_5ForCausalLM only from 0.27.0, before which its state is in
  the model's dtype), and Nemotron-H float32 unless its config says otherwise.
- vllm/model_executor/layers/mamba/mamba_utils.py: the mamba2 and gated-delta state shapes
  (conv state (kernel - 1 + speculative tokens) x conv dim / TP; temporal state heads / TP x
  head_dim x state), groups extended to a multiple of TP; Mamba-1's (Jamba: conv (kernel - 1) x
  intermediate / TP, temporal intermediate / TP x state, no speculative rows) and the short
  convolution's (LFM2: (kernel - 1) x conv_dim / TP, plus a row a speculative token from 0.29.0),
  the same sizes from 0.10.1.1 to 0.33.0. Conv states take the model's dtype; temporal states too
  unless --mamba-ssm-cache-dtype says otherwise (mamba1_state_dtype, mamba2_state_dtype,
  short_conv_state_dtype). A Falcon-H1 layer registers an attention layer and a Mamba-2 mixer, one
  spec each (falcon_h1.py FalconH1ParallelHybrid); neither Mamba-1 nor the short convolution holds a
  prefill checkpoint page (only mamba_mixer2.py and the FlashInfer gated-delta layer ask for one).
- Attention-free models (Mamba, FalconMamba, Mamba-2: IsAttentionFree) hold mamba states alone: a
  layer's page is its state, unpadded, its block max_model_len without prefix caching and the cache
  block (16) with it (vllm/model_executor/models/config.py MambaModelConfig, 0.13.0 to 0.33.0;
  gpu_model_runner.py, 0.10.2 and 0.11.0). Prefix caching is off by default for them in every
  release read. Before 0.10.2 they run on the V0 engine, which is refused here.
- vllm/platforms/interface.py (0.24.0, `_align_hybrid_block_size`): with mamba layers the
  attention block grows to 16 x cdiv(mamba page, 16 x one token's attention page) tokens and the
  mamba page is padded up to the attention page.
- vllm/v1/core/kv_cache_utils.py (0.24.0; 001cabc1be16): layers with one spec form one group;
  pages of unequal size are unified (unify_kv_cache_spec_page_size): a smaller page whose size
  divides the largest grows its block; one that does not is refused (NotImplementedError) up to
  0.23.0, padded to the largest page (page_size_padded, its block unchanged) from 0.24.0 when the
  attention backend reads pages by the block stride (FlashAttention does) and for every non-MLA
  attention layer from 0.29.0; an MLA page is never padded; a mamba page is padded from 0.26.0;
  mixed specs are grouped by spec into groups of equal size (the smallest count of layers of a
  kind, or the largest when it is under 1.5x the smallest), the last group of a kind padded
  ("Add N padding layers, may waste at most X% KV cache memory"); num_blocks = pool // page //
  group size; the concurrency is num_blocks / (the pages one full-length request holds, summed
  over the groups).
- "GPU KV cache size" prints num_blocks // groups x the smallest block size (times the
  context-parallel size) up to 0.20.0, and int(concurrency x max_model_len) from 0.20.1
  (vllm/v1/core/kv_cache_utils.py: 0.20.0 still counts blocks, 0.20.1, 0.20.2 and 0.21.0 print
  the product; `get_kv_cache_capacity`, 0.24.0). The V0 engine (0.6, 0.7) printed "# GPU blocks: N" of 16
  tokens over all layers, and the concurrency as N x block_size / max_model_len.

SGLang sizes its pool by other rules, read from sgl-project/sglang at commit 000ccdba94d4
(python/sglang/srt/mem_cache/memory_pool.py): a token is one cell over every layer of the rank,
(kv_lora_rank + qk_rope_head_dim) x elem for MLA (MLATokenToKVPool, not divided by TP), else
K and V of num_kv_heads / TP heads x head_dim x elem (MHATokenToKVPool); each layer's buffer
holds #tokens + page_size cells (the padded slot 0), and "KV Cache is allocated" prints
#tokens and the buffers' bytes / 2^30 ("GB") to two decimals.

All sizes are per rank and in bytes. Everything here is modeled, not measured.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from calc.engine.hfconfig import (
    CHUNKED,
    FULL,
    INDEXER_QUANT_BLOCK,
    LIGHTNING,
    LINEAR,
    MAMBA,
    MAMBA1,
    MLA,
    PARALLEL,
    RECURRENT,
    SHORT_CONV,
    SLIDING,
    ConfigError,
    GatedDeltaNet,
    Mamba1Mixer,
    Mamba2Mixer,
    Shape,
    ShortConvMixer,
)
from calc.engine.release import parse_release
from calc.engine.weights import cdiv

KV_DTYPES = ("auto", "bfloat16", "bf16", "float16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla", "nvfp4")
FP8_DS_MLA_BYTES = 656  # vllm/v1/kv_cache_interface.py, MLAAttentionSpec.real_page_size_bytes
KERNEL_BLOCK_ALIGNMENT = 16
# DeepSeek V4 keeps several caches a layer (vllm/models/deepseek_v4/attention.py, compressor.py and
# vllm/v1/attention/backends/mla/sparse_swa.py, 0.33.0): every layer a sliding window of sliding_window
# tokens (DeepseekV4SWACache, SlidingWindowMLASpec, 584 B a token in fp8_ds_mla, blocks of 64); a layer of
# ratio 4 or 128 one compressed entry for each 4 or 128 tokens (MLAAttentionSpec, tokens_per_state, 584 B,
# pages padded to 576 B) and its compressor's float32 state (CompressorStateCache, a window of 8 or 128
# tokens); a layer of ratio 4 also the indexer's keys (DeepseekV4IndexerCache, 132 B an entry) and its
# compressor's state. How vLLM groups these specs and unifies their pages was not read.
DSV4_KV_NOTE = ("DeepSeek V4's KV cache (a sliding window on every layer, compressed entries and compressor states on the "
                "ratio-4 and ratio-128 layers, the indexer's keys) is not modeled: vLLM's grouping of its cache specs was not read")  # fmt: skip


# The models whose vLLM class supports mamba prefix caching ("all" mode, 0.15.0 to 0.27.1):
# SupportsMambaPrefixCaching in vllm/model_executor/models/ (0.27.1).
MAMBA_PREFIX_CACHING = frozenset({
    "NemotronHForCausalLM", "JambaForCausalLM", "FalconH1ForCausalLM", "Zamba2ForCausalLM",
    "GraniteMoeHybridForCausalLM", "MambaForCausalLM", "FalconMambaForCausalLM", "Mamba2ForCausalLM",
})  # fmt: skip
BLOCK_64_FROM = (0, 34, 0)  # vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE 64 (16 up to 0.33.0)
NEWEST = "v0.32.0 to v0.33.x"  # the rules a start without a version follows: 0.32.0 and 0.33.0, the newest checked on public starts


@dataclass(frozen=True)
class Version:
    """How a vLLM build prints the pool and charges a window; see the module docstring."""

    name: str
    engine: str  # "v0" or "v1"
    prints: str  # "blocks" or "concurrency"
    in_flight_batches: int  # how many prefill budgets a sliding window is charged
    # prefix caching off by default for hybrid models: every V1 build up to 0.27.1 (vllm/config/model.py
    # up to 0.25.1, vllm/engine/arg_utils.py `and not model_config.is_hybrid` in 0.26.0 and 0.27.1)
    hybrid_prefix_caching_off: bool = False
    mamba_all: bool = False  # prefix caching on picks "all" for models in MAMBA_PREFIX_CACHING: 0.15.0 to 0.27.1
    mamba2_checkpoint: bool = False  # a mamba2 layer holds a prefill checkpoint page in "align" mode: 0.32.0 on
    pads_attention: bool = False  # unequal non-MLA attention pages padded, not refused: 0.24.0 on
    pads_mamba: bool = False  # a mamba page smaller than the largest padded: 0.26.0 on
    null_block: bool = False  # one block off the pool before the one-request check: 0.29.0 on
    # before 0.13 a mamba / linear-attention layer holds one state page a request whatever prefix
    # caching (vllm/v1/kv_cache_interface.py, 0.11.0: MambaSpec.max_memory_usage_bytes is one page)
    one_state_page: bool = False
    # a text-only Qwen3.5 (Qwen3_5ForCausalLM) takes mamba_ssm_dtype from its config from 0.27.0
    # (vllm/model_executor/models/config.py maps it to Qwen3_5ForCausalLMConfig); before, only the
    # multimodal class did, and its state is kept in the model's dtype
    causal_qwen3_5_state: bool = False
    # chunked local attention kept as its own spec ("chunked"), folded into full attention ("full"), or
    # not read ("unread"); see the module docstring (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE)
    chunked_local: str = "chunked"
    # DeepSeek V3.2's MLA cache under --kv-cache-dtype auto: "fp8_ds_mla" (0.11.0 and 0.13.0 turn auto into it),
    # "auto" (the model's dtype, 0.19.0 on), "unread" (0.14 to 0.18, not read), "absent" (no DeepseekV32ForCausalLM)
    sparse_mla: str = "auto"
    # Cohere2's sliding layers keep sliding_window + 1 tokens from 0.29.0, sliding_window before
    # (vllm/model_executor/models/commandr.py CohereAttention: per_layer_sliding_window, 0.28.0 and 0.29.0)
    cohere2_window_plus_one: bool = True
    # a short convolution's state holds one row more a speculative token from 0.29.0 (mamba_utils.py
    # short_conv_state_shape: conv_kernel - 1 + num_spec; before, conv_kernel - 1 whatever the drafter)
    short_conv_spec: bool = True
    release: tuple[int, int, int] = (0, 33, 999)  # the build's number; no version: the newest rules checked on public starts, 0.33.x


def version(text: str | None) -> Version:
    """The rules of a vLLM build: V0 before 0.8; V1 printing blocks up to 0.20.0, the concurrency
    times max_model_len from 0.20.1; a window charged two in-flight batches from 0.26; the rest as
    the fields of Version say. No version: the newest rules read (0.32.0 and 0.33.0)."""
    if not text:
        return Version(NEWEST, "v1", "concurrency", 2, False, False, True, True, True, True, causal_qwen3_5_state=True)
    major, minor, patch = parse_release(text)
    if (major, minor) < (0, 8):
        return Version(text, "v0", "blocks", 1, chunked_local="full", sparse_mla="absent", cohere2_window_plus_one=False,
                       short_conv_spec=False, release=(major, minor, patch))  # fmt: skip
    prints = "blocks" if (major, minor, patch) < (0, 20, 1) else "concurrency"
    at = (major, minor)
    return Version(
        text, "v1", prints, 2 if at >= (0, 26) else 1,
        hybrid_prefix_caching_off=at < (0, 28), mamba_all=(0, 15) <= at < (0, 28), mamba2_checkpoint=at >= (0, 32),
        pads_attention=at >= (0, 24), pads_mamba=at >= (0, 26), null_block=at >= (0, 29), one_state_page=at < (0, 13),
        causal_qwen3_5_state=at >= (0, 27),
        chunked_local="full" if (0, 10) <= at < (0, 14) else "chunked" if at >= (0, 19) else "unread",
        sparse_mla="absent" if at < (0, 11) else "fp8_ds_mla" if at < (0, 14) else "unread" if at < (0, 19) else "auto",
        cohere2_window_plus_one=at >= (0, 29), short_conv_spec=at >= (0, 29), release=(major, minor, patch),
    )  # fmt: skip


@dataclass(frozen=True)
class Spec:
    """One layer's cache on one rank, as a KVCacheSpec: its page and how many pages a request holds."""

    kind: str  # full, sliding, chunked, mla, mamba
    block_size: int
    page_bytes: int
    window: int | None = None  # a sliding window's, or a chunked layer's attention_chunk_size
    state_pages: int = 1  # mamba: pages a request holds ("all" mode: these beyond one a block of context)
    all_mode: bool = False  # mamba "all" mode: a page per block of context

    def per_token(self) -> Fraction:
        return Fraction(self.page_bytes, self.block_size)

    def pages(self, max_model_len: int, prefill_budget: int, dcp: int) -> int:
        """Pages one request of max_model_len holds (the spec's max_memory_usage_bytes / page)."""
        if self.kind in (FULL, MLA):
            return cdiv(cdiv(max_model_len, dcp), self.block_size)
        if self.kind == SLIDING:
            assert self.window is not None
            return cdiv(min(self.window - 1 + prefill_budget, max_model_len), self.block_size) + 1
        if self.kind == CHUNKED:  # ChunkedLocalAttentionSpec.max_memory_usage_bytes: no page beyond
            assert self.window is not None
            return cdiv(min(self.window + prefill_budget, max_model_len), self.block_size)
        if self.all_mode:
            return cdiv(max_model_len, self.block_size) + self.state_pages
        return self.state_pages


@dataclass(frozen=True)
class Settings:
    tp: int = 1
    kv_cache_dtype: str = "auto"
    block_size: int | None = None
    prefill_budget: int = 8192  # --max-num-batched-tokens
    speculative_tokens: int = 0
    dcp: int = 1
    mamba_cache_mode: str = "align"  # prefix caching on (the default from 0.28.0); "none" without it; "all" (0.15.0 to 0.27.1)
    mamba_ssm_dtype: str = "auto"


def mamba_cache_mode(shape: Shape, v: Version, prefix_caching: bool | None = None) -> str:
    """The mamba cache mode a hybrid runs in on build `v`: "none" without prefix caching (the
    default for hybrids up to 0.27.1, and before 0.13 whatever the setting: one state page),
    "all" for the models that support mamba prefix caching from 0.15.0 to 0.27.1, else "align".
    `prefix_caching`: the start's setting, None for the build's default. A catalog architecture
    of kind "mamba" is Nemotron-H's pattern (hfconfig.from_architecture), which supports it."""
    if not prefix_caching_on(shape, v, prefix_caching) or v.one_state_page:
        return "none"
    supports = shape.architecture in MAMBA_PREFIX_CACHING or shape.architecture == "catalog: mamba"
    return "all" if v.mamba_all and supports else "align"


def prefix_caching_on(shape: Shape, v: Version, prefix_caching: bool | None = None) -> bool:
    """Whether a start runs with prefix caching: as set, else the build's default, which is off for
    hybrids up to 0.27.1 and for attention-free models in every release read (0.10.2 and 0.11.0:
    MambaModelConfig turns it off whatever the setting; 0.13.0 to 0.33.0: vllm/config/model.py
    is_prefix_caching_supported is False for attn_type "attention_free", the default
    vllm/engine/arg_utils.py takes, while --enable-prefix-caching keeps it)."""
    if prefix_caching is not None:
        return prefix_caching
    hybrid = bool(RECURRENT & set(shape.layers))
    return not (shape.attention_free or (hybrid and v.hybrid_prefix_caching_off))


# --kv-cache-dtype auto under a ModelOpt checkpoint that names its KV cache's quantization: the engine takes that
# (vllm/engine/arg_utils.py create_engine_config, resolve_kv_cache_dtype_string in vllm/utils/torch_utils.py:
# fp8 from 0.14.0, not in 0.13.0; nvfp4 in 0.24.0 and 0.33.0, not in 0.18.0, the releases between not read)
CHECKPOINT_KV_FROM = {"fp8_e4m3": (0, 14), "nvfp4": (0, 24)}


def checkpoint_kv_dtype(quant: object, kv_cache_dtype: str, release: tuple[int, int]) -> tuple[str, str | None]:
    """The KV cache dtype a start runs with: `kv_cache_dtype` as given, but "auto" under a ModelOpt
    quantization_config whose kv_cache_scheme (or kv_cache_quant_algo, at its top or under
    "quantization") says FP8 or NVFP4 becomes fp8_e4m3 or nvfp4, as get_kv_cache_quant_algo_string
    reads it (0.33.0); with a note saying so, or None where nothing changed."""
    if kv_cache_dtype.strip().lower() != "auto" or not isinstance(quant, dict):
        return kv_cache_dtype, None
    if not str(quant.get("quant_method", "")).lower().startswith("modelopt"):
        return kv_cache_dtype, None
    inner = quant.get("quantization")
    inner = inner if isinstance(inner, dict) else quant
    said = inner.get("kv_cache_scheme") or quant.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo") or quant.get("kv_cache_quant_algo")
    algo: object = said
    if isinstance(said, dict):
        algo = "fp8" if (said.get("dynamic") is False and said.get("num_bits") == 8 and said.get("type") == "float") else (
            "nvfp4" if said.get("num_bits") == 4 and said.get("type") == "float" else None)  # fmt: skip
    taken = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(str(algo).lower()) if isinstance(algo, str) else None
    if taken is None or release < CHECKPOINT_KV_FROM[taken]:
        return kv_cache_dtype, None
    first = ".".join(map(str, CHECKPOINT_KV_FROM[taken]))
    return taken, (f"KV cache {taken}: --kv-cache-dtype auto takes the checkpoint's KV quantization ({json.dumps(said)}) from the config's "
                   f"quantization_config (vllm/utils/torch_utils.py resolve_kv_cache_dtype_string, {first}.0 and later); "
                   "--kv-cache-dtype bfloat16 keeps the model's dtype")  # fmt: skip


def _elem_bytes(kv_dtype: str, model_dtype_bytes: int) -> int:
    if kv_dtype in ("auto",):
        return model_dtype_bytes
    if kv_dtype in ("bfloat16", "bf16", "float16", "fp16"):
        return 2
    return 1


def layer_specs(shape: Shape, s: Settings, v: Version | None = None, max_model_len: int | None = None) -> list[Spec]:
    """The cache spec of every layer that holds one, in order, before grouping (`v`: the build,
    the newest rules when None; `max_model_len`: the block of an attention-free model's state
    without prefix caching, the default block where it is not given)."""
    v = v or version(None)
    if shape.attention_free and v.release < (0, 10, 2):
        raise ValueError(f"--engine-version: found {v.name}, expected 0.10.2 or later: vLLM {v.name} runs {shape.architecture} on the V0 engine, "
                         "whose mamba cache is not modeled (0.10.1.1: vllm/engine/arg_utils.py falls back to V0 for a model with inner state "
                         "unless VLLM_USE_V1=1; 0.8.5 and 0.9.2: mamba.py is SupportsV0Only)")  # fmt: skip
    if shape.compress_ratios:
        raise ValueError(DSV4_KV_NOTE)
    if s.kv_cache_dtype not in KV_DTYPES:
        raise ValueError(f"--kv-cache-dtype: found {s.kv_cache_dtype!r}, expected one of {', '.join(KV_DTYPES)}")
    if s.kv_cache_dtype == "fp8_ds_mla" and MLA not in shape.layers:
        raise ValueError("--kv-cache-dtype: fp8_ds_mla packs an MLA latent; this model has no MLA layers")
    elem = _elem_bytes(s.kv_cache_dtype, shape.dtype_bytes)

    def token_bytes(heads: int, d: int, dv: int) -> int:
        kv_heads = max(1, heads // s.tp)
        if s.kv_cache_dtype == "nvfp4":
            return kv_heads * (d // 2 + d // 16 + dv // 2 + dv // 16)
        return kv_heads * (d + dv) * elem

    attention_token = token_bytes(shape.kv_heads, shape.head_dim, shape.head_dim_v or shape.head_dim)
    # Gemma 4's full layers: their own KV heads and head_dim, K and V alike (gemma4.py, 0.19.0 to 0.33.0)
    full_token = token_bytes(*shape.full_kv, shape.full_kv[1]) if shape.full_kv else attention_token
    if MLA in shape.layers:
        latent = (shape.kv_lora_rank or 0) + (shape.qk_rope_head_dim or 0)
        mla_token = FP8_DS_MLA_BYTES if s.kv_cache_dtype in ("fp8_ds_mla",) else latent * elem
        if shape.indexer:
            mla_token = _sparse_mla_token(shape, s, v, latent)
    state = _state_bytes(shape, s, v)
    # 16 tokens a block up to 0.33.x, 64 for MLA; from 0.34.0 64 for every attention model (CacheConfig.DEFAULT_BLOCK_SIZE,
    # vllm/config/cache.py, which FlashAttention keeps: vllm/v1/attention/backends/flash_attn.py get_preferred_block_size, 0.34.0);
    # a hybrid's block is aligned to its state below, as read up to 0.33.0
    block = s.block_size or (64 if MLA in shape.layers or (v.release >= BLOCK_64_FROM and not state) else 16)
    if shape.indexer and block % 64:
        raise ValueError(f"--block-size: found {block}, expected a multiple of 64: DeepSeek V3.2's sparse MLA backends take no other "
                         "(0.11.0 and 0.13.0 force 64: vllm/platforms/cuda.py; FlashMLASparseBackend MultipleOf(64), 0.33.0)")  # fmt: skip
    if shape.attention_free:
        return _attention_free_specs(shape, s, v, state, max_model_len)
    if state:
        need = KERNEL_BLOCK_ALIGNMENT * cdiv(state, KERNEL_BLOCK_ALIGNMENT * attention_token)
        block = max(block, need)
    if s.mamba_cache_mode not in ("align", "none", "all"):
        raise ValueError(f"mamba cache mode: found {s.mamba_cache_mode!r}, expected align (prefix caching on), all or none")
    state_pages = {"align": 2, "none": 1, "all": 0}[s.mamba_cache_mode] + s.speculative_tokens
    kinds = [k for kind in shape.layers for k in ((FULL, MAMBA) if kind == PARALLEL else (kind,))]  # Falcon-H1: a cache and a state a layer
    if s.speculative_tokens and shape.drafter_layers:  # the MTP drafter's attention layers share the pool
        if shape.drafter_kinds:  # Nemotron-H: the attention layers of its MTP step (nemotron_h_mtp.py)
            kinds += [k for k in shape.drafter_kinds if k == FULL] * shape.drafter_layers
        else:
            kinds += [MLA if MLA in kinds else FULL] * shape.drafter_layers
    if CHUNKED in kinds and v.chunked_local == "unread":
        raise ValueError(f"--engine-version: found {v.name}, expected 0.10.x to 0.13.x or 0.19.0 and later: whether vLLM {v.name} keeps chunked "
                         "local attention apart was not read (0.10.1.1 to 0.13.0 fold it into full attention, 0.19.0 on keep it)")  # fmt: skip
    if v.chunked_local == "full":  # the hybrid KV cache manager off: every chunked layer a full-attention one
        kinds = [FULL if k == CHUNKED else k for k in kinds]
    window = shape.sliding_window
    if window is not None and shape.architecture == "Cohere2ForCausalLM" and v.cohere2_window_plus_one:
        window += 1
    specs = []
    for kind in kinds:
        if kind == CHUNKED:
            specs.append(Spec(CHUNKED, block, block * attention_token, window=shape.attention_chunk_size))
        elif kind == FULL:
            specs.append(Spec(FULL, block, block * full_token))
        elif kind == SLIDING:
            specs.append(Spec(SLIDING, block, block * attention_token, window=window))
        elif kind == MLA:
            specs.append(Spec(MLA, block, block * mla_token))
        elif kind in (MAMBA, LINEAR, MAMBA1, SHORT_CONV, LIGHTNING):
            checkpoint = int(kind == MAMBA and v.mamba2_checkpoint and s.mamba_cache_mode == "align")
            specs.append(Spec(MAMBA, block, block * attention_token, state_pages=state_pages + checkpoint, all_mode=s.mamba_cache_mode == "all"))
    return specs


def _attention_free_specs(shape: Shape, s: Settings, v: Version, state: int, max_model_len: int | None) -> list[Spec]:
    """Mamba and Mamba-2 without attention (hfconfig.ATTENTION_FREE): every layer a MambaSpec whose page
    is one request's state, unpadded (mamba_page_size_padded is set only for hybrids, by
    HybridAttentionMambaModelConfig), and whose block is mamba_block_size: max_model_len without prefix
    caching, so that a request holds one block whatever its length, and the cache block (16 unless
    --block-size) with it (vllm/model_executor/models/config.py MambaModelConfig, 0.13.0 to 0.33.0;
    vllm/v1/worker/gpu_model_runner.py get_kv_cache_spec, block_size=max_model_len, 0.10.2 and 0.11.0).
    The pages a request holds are the hybrids' ("none": one, "align": two, "all": one a block of
    context; one more a draft token; a Mamba-2 mixer's prefill checkpoint in "align" from 0.32.0).
    The mixer's width divides over the ranks as vLLM asserts (mamba_mixer2.py: num_heads, and n_groups
    unless it is 1; mamba_mixer.py's column-parallel projections: intermediate_size)."""
    if MAMBA in shape.layers:
        m = shape.part(Mamba2Mixer)
        if m.heads % s.tp:
            raise ConfigError(shape.file, "num_heads", m.heads, f"a multiple of the tensor parallel size {s.tp} (mamba_mixer2.py asserts it)")
        if m.groups % s.tp and m.groups != 1:
            raise ConfigError(shape.file, "n_groups", m.groups, f"1 or a multiple of the tensor parallel size {s.tp} (mamba_mixer2.py asserts it)")
    elif (inner := shape.part(Mamba1Mixer).inner) % s.tp:
        raise ConfigError(shape.file, "intermediate_size", inner, f"a multiple of the tensor parallel size {s.tp}: the mixer's projections divide by it")
    if s.mamba_cache_mode not in ("align", "none", "all"):
        raise ValueError(f"mamba cache mode: found {s.mamba_cache_mode!r}, expected align (prefix caching on), all or none")
    if s.mamba_cache_mode == "none":
        block = max_model_len or s.block_size or 16
    else:
        block = s.block_size or 16
    pages = {"align": 2, "none": 1, "all": 0}[s.mamba_cache_mode] + s.speculative_tokens
    checkpoint = int(MAMBA in shape.layers and v.mamba2_checkpoint and s.mamba_cache_mode == "align")
    spec = Spec(MAMBA, block, state, state_pages=pages + checkpoint, all_mode=s.mamba_cache_mode == "all")
    return [spec] * len(shape.layers)


def indexer_bytes(shape: Shape) -> int:
    """One token's key in one DeepSeek V3.2 indexer cache: index_head_dim fp8 values and a float32
    scale for each 128 (deepseek_v2.py Indexer: DeepseekV32IndexerCache of head_dim + head_dim //
    quant_block_size x 4 bytes, torch.uint8, one head, whatever the ranks: 132 B, 0.11.0 to 0.33.0)."""
    d = shape.indexer.head_dim if shape.indexer else 0
    return d + d // INDEXER_QUANT_BLOCK * 4


def _sparse_mla_token(shape: Shape, s: Settings, v: Version, latent: int) -> int:
    """One token of one DeepSeek V3.2 layer: the MLA latent and the indexer's key. vLLM gives both the
    layer's MLA block size, and every layer's two specs are MLAAttentionSpecs of one block size, which
    UniformTypeKVCacheSpecs puts in one group whose page is their sum (vllm/v1/core/kv_cache_utils.py
    get_kv_cache_groups, 0.11.0; kv_cache_planning.py, 0.33.0): a layer counts as one spec of the sum.

    The latent: 0.11.0 and 0.13.0 turn --kv-cache-dtype auto and any fp8 into fp8_ds_mla, 656 B
    (vllm/model_executor/models/config.py, DeepseekV32ForCausalLM.verify_and_update_config); from
    0.19.0 auto keeps the model's dtype (576 x 2 B) and FlashMLA's sparse backend serves fp8 as
    fp8_ds_mla (mla_attention.py, _canonicalize_sparse_mla_kv_cache_dtype, 0.26.0 and 0.33.0). FlashInfer's
    sparse backend (Blackwell) keeps standard fp8, 576 B a token, which is not modeled."""
    if v.sparse_mla == "absent":
        raise ValueError(f"--engine-version: found {v.name}, expected 0.11.0 or later: vLLM {v.name} has no DeepseekV32ForCausalLM")
    if v.sparse_mla == "unread":
        raise ValueError(f"--engine-version: found {v.name}, expected 0.11.x to 0.13.x or 0.19.0 and later: how vLLM {v.name} stores DeepSeek "
                         "V3.2's MLA cache was not read (under --kv-cache-dtype auto 0.11.0 and 0.13.0 use fp8_ds_mla, 0.19.0 on the model's dtype)")  # fmt: skip
    kv = s.kv_cache_dtype
    if kv == "nvfp4":
        raise ValueError("--kv-cache-dtype nvfp4: DeepSeek V3.2's sparse MLA packs its own NVFP4 format (nvfp4_ds_mla), which is not modeled")
    if kv.startswith("fp8") or (kv == "auto" and v.sparse_mla == "fp8_ds_mla"):
        main = FP8_DS_MLA_BYTES
    else:
        main = latent * _elem_bytes(kv, shape.dtype_bytes)
    return main + indexer_bytes(shape)


def _state_bytes(shape: Shape, s: Settings, v: Version) -> int:
    """One request's mamba / gated-delta state on one rank (mamba_utils.py)."""
    conv_elem = shape.dtype_bytes
    if s.mamba_ssm_dtype != "auto":
        ssm_elem = {"float32": 4, "bfloat16": 2, "float16": 2}[s.mamba_ssm_dtype]
    else:  # vllm/model_executor/models/config.py: "auto" takes the config's mamba_ssm_dtype
        read = shape.architecture != "Qwen3_5ForCausalLM" or v.causal_qwen3_5_state
        ssm_elem = (shape.state_dtype_bytes if read else None) or conv_elem
    tp, spec = s.tp, s.speculative_tokens
    if LIGHTNING in shape.layers:  # linear_attention_state_shape: heads / TP x head_dim x head_dim, the model's dtype, no drafts
        return shape.heads // tp * shape.head_dim * shape.head_dim * conv_elem
    if MAMBA1 in shape.layers:  # mamba1_state_shape: conv (kernel - 1) x inner / TP, temporal inner / TP x state
        m1 = shape.part(Mamba1Mixer)
        return (m1.conv_kernel - 1) * (m1.inner // tp) * conv_elem + (m1.inner // tp) * m1.state * ssm_elem
    if SHORT_CONV in shape.layers:  # short_conv_state_shape: (kernel - 1, plus the drafts from 0.29.0) x conv_dim / TP
        c = shape.part(ShortConvMixer)
        return (c.conv_kernel - 1 + (spec if v.short_conv_spec else 0)) * (c.inner // tp) * conv_elem
    if MAMBA in shape.layers or PARALLEL in shape.layers:
        m2 = shape.part(Mamba2Mixer)
        groups = m2.groups + (0 if m2.groups % tp == 0 else tp - m2.groups)
        conv_dim = m2.heads * m2.head_dim + 2 * groups * m2.state
        conv = (m2.conv_kernel - 1 + spec) * (conv_dim // tp) * conv_elem
        ssm = (m2.heads // tp) * m2.head_dim * m2.state * ssm_elem
        return conv + ssm
    if LINEAR in shape.layers:
        g = shape.part(GatedDeltaNet)
        conv_dim = g.k_dim * g.k_heads * 2 + g.v_dim * g.v_heads
        conv = (g.conv_kernel - 1 + spec) * (conv_dim // tp) * conv_elem
        ssm = (g.v_heads // tp) * g.v_dim * g.k_dim * ssm_elem
        return conv + ssm
    return 0


@dataclass(frozen=True)
class Group:
    spec: Spec
    layers: int  # real layers in the group; the rest of group_size is padding


@dataclass(frozen=True)
class Layout:
    groups: tuple[Group, ...]
    group_size: int
    page_bytes: int  # one page of one layer, the same for every group
    padding_layers: int

    @property
    def min_block_size(self) -> int:
        return min(g.spec.block_size for g in self.groups)


def layout(specs: list[Spec], v: Version | None = None) -> Layout:
    """Group the layers as kv_cache_utils.get_kv_cache_groups does (`v`: the build, the newest
    rules when None)."""
    v = v or version(None)
    if not specs:
        raise ValueError("the model has no layer that holds a KV cache")
    if len(set(specs)) == 1:
        return Layout((Group(specs[0], len(specs)),), len(specs), specs[0].page_bytes, 0)
    largest = max(sp.page_bytes for sp in specs)
    unified = []
    for sp in specs:  # unify_kv_cache_spec_page_size: grow the block of smaller pages, or pad the page
        if sp.page_bytes != largest:
            if sp.kind == MAMBA and v.pads_mamba:
                sp = replace(sp, page_bytes=largest)  # page_size_padded: the state's block unchanged
            elif largest % sp.page_bytes == 0:
                sp = replace(sp, block_size=sp.block_size * (largest // sp.page_bytes), page_bytes=largest)
            elif sp.kind in (FULL, SLIDING, CHUNKED) and v.pads_attention:
                sp = replace(sp, page_bytes=largest)  # page_size_padded: the same block, a padded page
            else:
                raise ValueError(
                    f"page sizes cannot be unified: vLLM {v.name} raises NotImplementedError for this layout "
                    "(a page that does not divide the largest is padded only for non-MLA attention layers, from 0.24.0)"
                )
        unified.append(sp)
    by_spec: dict[Spec, int] = {}
    for sp in unified:
        by_spec[sp] = by_spec.get(sp, 0) + 1
    fewest, most = min(by_spec.values()), max(by_spec.values())
    size = most if most < fewest * 1.5 else fewest
    groups, padding = [], 0
    for sp, count in by_spec.items():
        n = cdiv(count, size)
        padding += n * size - count
        for i in range(n):
            groups.append(Group(sp, len(range(i, count, n))))
    return Layout(tuple(groups), size, largest, padding)


@dataclass(frozen=True)
class Request:
    """What one request of max_model_len costs on one rank, and what a pool holds."""

    max_model_len: int
    pages_per_request: int
    bytes_per_request: int
    bytes_per_token: Fraction  # the part that grows with context
    fixed_bytes: int  # the part that does not (windows, states)
    layout: Layout
    null_block_bytes: int = 0  # the block vLLM holds back before the one-request check (0.29.0 on)

    @property
    def floor_bytes(self) -> int:
        """The smallest pool vLLM's one-request check passes: the request, and from 0.29.0 one block
        more (check_enough_kv_cache_memory takes `_pool_bytes_per_block(groups)`, the largest group's
        page over its layers, off the pool first: vllm/v1/core/kv_cache_utils.py 0.29.0,
        vllm/v1/core/kv_cache_planning.py 0.33.0)."""
        return self.bytes_per_request + self.null_block_bytes


def request(shape: Shape, s: Settings, max_model_len: int, v: Version) -> Request:
    specs = layer_specs(shape, s, v, max_model_len)
    lay = layout(specs, v)
    budget = s.prefill_budget * v.in_flight_batches
    pages = sum(g.spec.pages(max_model_len, budget, s.dcp) for g in lay.groups)
    if v.engine == "v0":
        # V0 sizes a block over all layers and every request as full attention.
        per_token = sum((Fraction(sp.per_token()) for sp in specs), Fraction(0))
        return Request(max_model_len, cdiv(max_model_len, specs[0].block_size),
                       int(per_token * cdiv(max_model_len, specs[0].block_size) * specs[0].block_size), per_token, 0, lay)  # fmt: skip
    grows = [g for g in lay.groups if g.spec.kind in (FULL, MLA) or g.spec.all_mode]
    growing = sum((Fraction(lay.group_size * lay.page_bytes, g.spec.block_size * (s.dcp if g.spec.kind in (FULL, MLA) else 1)) for g in grows), Fraction(0))
    fixed_pages = sum(g.spec.pages(max_model_len, budget, s.dcp) for g in lay.groups if g not in grows)
    fixed_pages += sum(g.spec.state_pages for g in grows if g.spec.all_mode)  # "all" mode: its speculative pages
    block = lay.group_size * lay.page_bytes if v.null_block else 0
    return Request(max_model_len, pages, pages * lay.group_size * lay.page_bytes, growing, fixed_pages * lay.group_size * lay.page_bytes, lay, block)


@dataclass(frozen=True)
class Pool:
    blocks: int
    tokens: int  # what "GPU KV cache size" prints
    concurrency: Fraction  # what "Maximum concurrency" prints, to two decimals


def pool(shape: Shape, s: Settings, max_model_len: int, pool_bytes: int, v: Version, req: Request | None = None) -> Pool:
    """Blocks, the printed token count and the concurrency for a pool of pool_bytes a rank
    (`req`: the request at these settings, when the caller has it already)."""
    req = req or request(shape, s, max_model_len, v)
    lay = req.layout
    if v.engine == "v0":
        specs = layer_specs(shape, s, v, max_model_len)
        block_bytes = sum(sp.page_bytes for sp in specs)
        blocks = pool_bytes // block_bytes
        bs = specs[0].block_size
        return Pool(blocks, blocks * bs, Fraction(blocks * bs, max_model_len))
    blocks = pool_bytes // lay.page_bytes // lay.group_size
    concurrency = Fraction(blocks, req.pages_per_request)
    if v.prints == "blocks":
        tokens = blocks // len(lay.groups) * lay.min_block_size * s.dcp
    else:
        tokens = int(concurrency * max_model_len)
    return Pool(blocks, tokens, concurrency)


def largest_max_model_len(shape: Shape, s: Settings, pool_bytes: int, v: Version, ceiling: int = 10**8) -> int:
    """The longest max_model_len one request of which fits the pool (vLLM's binary search, run
    from 0.29.0 on the pool less one block, as its check is). A request that does not grow with its
    length (an attention-free model outside "all" mode) fits at any length once one state does: the
    ceiling, or 0."""

    def fits(n: int) -> bool:
        return request(shape, s, n, v).floor_bytes <= pool_bytes

    return largest(fits, 1, ceiling) or 0


def largest(holds: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The largest n in [lo, hi] for which `holds`, where it holds up to some n and not beyond (a
    binary search, as vLLM's for the longest length); None where it does not hold at `lo`."""
    if hi < lo or not holds(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if holds(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def sglang_cell_bytes(shape: Shape, s: Settings) -> int:
    """One token's cache over every layer of one rank, as SGLang's memory pool holds it."""
    if set(shape.layers) & RECURRENT:
        raise ValueError("SGLang keeps a hybrid's recurrent state in a pool of its own, which is not modeled here")
    elem = _elem_bytes(s.kv_cache_dtype, shape.dtype_bytes)
    layers = sum(1 for kind in shape.layers if kind in (FULL, SLIDING, CHUNKED, MLA))
    if MLA in shape.layers:
        return ((shape.kv_lora_rank or 0) + (shape.qk_rope_head_dim or 0)) * layers * elem
    return sum(max(1, heads // s.tp) * d * 2 * elem for heads, d in (shape.kv_dims(kind) for kind in shape.layers if kind in (FULL, SLIDING, CHUNKED)))


def sglang_tokens(shape: Shape, s: Settings, pool_bytes: int, page_size: int = 1) -> int:
    """The #tokens of a pool whose buffers hold pool_bytes: (#tokens + page_size) cells."""
    return max(0, pool_bytes // sglang_cell_bytes(shape, s) - page_size)


def settings_error(shape: Shape, s: Settings) -> None:
    """Refuse a TP the model's heads cannot be split over, naming the config field."""
    if s.tp < 1 or shape.heads % s.tp:
        raise ConfigError(shape.file, "num_attention_heads", shape.heads, f"a multiple of the tensor parallel size {s.tp}")
