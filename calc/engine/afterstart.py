"""After the start: what a prefill at max_model_len takes beyond what the profile run measured.

vLLM sizes the pool from a profile run of max_num_batched_tokens fresh tokens with no context
(vllm/v1/worker/gpu_model_runner.py, _dummy_run(is_profile=True)). Chunked prefill's last chunk
of a max_model_len prompt attends to the whole context, and what grows with that context is
allocated after the pool is, out of whatever memory the start left:

- MLA (DeepSeek V2/V3, Kimi K2): the context is read in chunks of W tokens, W = min(max(8 x
  max_model_len, 4 x max_num_seqs x block_size), 65,536) rounded up to the block
  (vllm/model_executor/layers/attention/mla_attention.py,
  determine_chunked_prefill_workspace_size, 0.33.0). The gather workspace, W x (kv_lora_rank +
  qk_rope_head_dim) in 16 bits, is allocated with the attention metadata builder, after the
  profile; each context chunk is then up-projected through kv_b_proj into kv_nope, W x heads x
  (qk_nope_head_dim + v_head_dim), and concatenated into k, W x heads x (qk_nope_head_dim +
  qk_rope_head_dim), 16 bits each (_compute_prefill_context), and the chunk's queries keep a
  partial output and its log-sum-exp to merge across context chunks (heads x v_head_dim in 16
  bits and heads in float32 a query token, twice).
- A sparse-attention indexer (DeepSeek V3.2's and GLM-5's lightning indexer): the logits of the
  chunk's queries against the whole context are float32, queries x context x 4 B; from 0.19.0
  vLLM cuts them into sub-chunks of at most VLLM_SPARSE_INDEXER_MAX_LOGITS_MB (512 MiB)
  (vllm/v1/attention/backends/mla/indexer.py, split_indexer_prefill_chunks); before, one chunk
  of the whole width. The profile run measured queries x queries.
- Plain attention (FlashAttention, FlashInfer, Triton): the kernels tile the scores, so the last
  chunk's activations are the profile run's; nothing grows with the context but the KV the pool
  already holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine.hfconfig import MLA, Shape
from calc.units import InputError, fmt, shown

MLA_CONTEXT_CAP = 64 * 1024  # tokens: mla_attention.py, "limiting it to 64k tokens"


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class Extra:
    """What the worst prefill takes beyond the profile run, on one rank."""

    bytes: int
    parts: tuple[tuple[str, int], ...]
    source: str
    after_profile_bytes: int = 0  # allocated after the profile run but before serving: in a reading taken after the start


def mla_context(shape: Shape, tp: int, max_model_len: int, max_num_seqs: int, block_size: int, chunk_tokens: int) -> Extra:
    """The MLA context pass of the last chunk: the gather workspace and one context chunk
    up-projected for the rank's heads, and the partial outputs merged across chunks."""
    if MLA not in shape.layers:
        raise InputError("worst prefill: the model has no MLA layer")
    rope, nope, v, lora = shape.qk_rope_head_dim, shape.qk_nope_head_dim, shape.v_head_dim, shape.kv_lora_rank
    assert rope and nope and v and lora
    heads = shape.heads // tp
    w = round_up(max(min(max(8 * max_model_len, 4 * max_num_seqs * block_size), MLA_CONTEXT_CAP), block_size), block_size)
    workspace = w * (lora + rope) * 2
    context = min(w, max(0, max_model_len - chunk_tokens))  # the last chunk's context, one pass of at most w tokens
    parts = (
        ("up-projected context (kv_nope)", context * heads * (nope + v) * 2),
        ("k for the context (k_nope with k_pe)", context * heads * (nope + rope) * 2),
        ("partial outputs and log-sum-exp", 2 * chunk_tokens * heads * (v * 2 + 4) if context else 0),
    )
    return Extra(
        sum(b for _, b in parts),
        parts,
        f"vllm/model_executor/layers/attention/mla_attention.py, 0.33.0: context chunks of {w:,} tokens "
        f"(min(max(8 x {max_model_len:,}, 4 x {max_num_seqs} x {block_size}), 65,536)), {heads} heads a rank; "
        f"the gather workspace, {workspace:,} B, is allocated after the profile run, before serving",
        workspace,
    )


def sparse_indexer_logits(chunk_tokens: int, max_model_len: int, rel: tuple[int, int], budget_mib: int = 512) -> Extra:
    """The indexer's float32 logits of the last chunk against the whole context, less the
    chunk-against-itself the profile run measured."""

    def logits(width: int) -> int:
        whole = chunk_tokens * width * 4
        return min(whole, budget_mib * 2**20) if rel >= (0, 19) else whole

    extra = logits(max_model_len) - logits(chunk_tokens)
    how = (
        f"sub-chunks of at most {budget_mib} MiB (VLLM_SPARSE_INDEXER_MAX_LOGITS_MB)"
        if rel >= (0, 19)
        else "one chunk of the whole width (no budget before 0.19.0)"
    )
    return Extra(
        max(0, extra),
        (("indexer logits at full context", logits(max_model_len)), ("less the profile run's", logits(chunk_tokens))),
        f"vllm/v1/attention/backends/mla/indexer.py split_indexer_prefill_chunks: {chunk_tokens:,} x {max_model_len:,} x 4 B, {how}",
    )


def budget_crossing(chunk_tokens: int, budget_mib: int = 512, compression: int = 1) -> int:
    """The context (in prompt tokens) past which a chunk's indexer logits exceed the budget."""
    return (budget_mib * 2**20 // (4 * chunk_tokens)) * compression


def sparse_indexer_churn(chunk_tokens: int, prompt_tokens: int, rel: tuple[int, int], budget_mib: int = 512, compression: int = 1) -> Extra:
    """What a long prefill leaves in the caching allocator on a unified-memory box when every
    chunk's indexer logits are a size not asked for before: each chunk step adds a new segment
    the allocator keeps (vllm-project/vllm pull request 58068's account of issue 55569, GLM-5.3-Flash
    on DGX Spark; expandable_segments or a smaller budget avoids it). The sum over the prompt's
    chunks of each chunk's logits, chunk x (context so far / compression) x 4 B, at most the budget
    a launch from 0.19.0. `compression`: the indexer's context pooling (GLM-5.3-Flash's kpool 4)."""
    if chunk_tokens < 1 or prompt_tokens < 1 or compression < 1:
        raise InputError("worst prefill: found a chunk, prompt or compression below 1, expected counts of at least 1")
    cap = budget_mib * 2**20
    total = 0
    chunks = -(-prompt_tokens // chunk_tokens)
    for k in range(1, chunks + 1):
        whole = chunk_tokens * (min(k * chunk_tokens, prompt_tokens) // compression) * 4
        total += min(whole, cap) if rel >= (0, 19) else whole
    return Extra(
        total,
        (("chunks", chunks), ("first chunk over the budget at (tokens)", budget_crossing(chunk_tokens, budget_mib, compression))),
        f"vllm/v1/attention/backends/mla/indexer.py, and pull request 58068 (issue 55569): {chunks} chunks of {chunk_tokens:,} tokens, "
        "each chunk's logits a new allocator segment",
    )


def verdict(left_bytes: int, extra: Extra) -> tuple[bool, str]:
    """Whether the worst prefill fits in what the start left, and the sentence that says so."""
    fits = extra.bytes <= left_bytes
    # Printed so the figures never contradict the verdict: when it fits, both to the nearest (a
    # rounding that keeps their order); when it does not, what the prefill takes rounded up and
    # what is left down, so the printed shortfall, worked from them as printed, is never 0.00.
    short = not fits
    takes, left = shown(extra.bytes, "GiB", up=short), shown(left_bytes, "GiB", down=short)
    said = f"a prefill at max_model_len takes {fmt(takes, 'GiB')} a rank beyond the profile run; {fmt(left, 'GiB')} is left after " + (
        "the start: it fits" if fits else f"the start: {fmt(takes - left, 'GiB')} short, the long prefill will fail after a clean start"
    )
    return fits, said
