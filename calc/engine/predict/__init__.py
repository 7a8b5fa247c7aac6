"""Before the first start on a discrete card: the pool vLLM will leave for the KV cache, term by term.

vLLM sizes its KV pool once, at start (vllm/v1/worker/gpu_worker.py, determine_available_memory,
v0.20.0 to v0.33.0; vllm/worker/worker.py, determine_num_available_blocks, on V0):

    requested = ceil(total x gpu_memory_utilization)        (vllm/v1/worker/utils.py, request_memory)
    pool      = requested - weights - activation peak - non-torch increase - CUDA graph estimate

- weights: what loading left allocated on the rank ("Model loading took"), modeled here by
  calc/engine/weights.py from the config;
- activation peak: the torch allocator's peak over the profile run (gpu_model_runner.py,
  profile_run): one forward pass of max_num_batched_tokens tokens (_dummy_run, is_profile=True)
  followed by the sampler's warm-up over min(max_num_seqs, tokens) rows of logits
  (_dummy_sampler_run; on Model Runner V2, vllm/v1/worker/gpu/model_runner.py, greedy sampling
  from the logits until its second, top-k/top-p pass of v0.33.0: terms.sampler_warmup);
  from v0.27 the worker prints it as the transient headroom over what the profile leaves allocated
  plus the graph estimate, and the weights and non-torch memory as one consumed figure
  (vllm/utils/mem_utils.py memory_profiling, total_consumed), which also holds what torch keeps
  allocated beside the weights after the profile (the runner's buffers, not modeled apart);
- non-torch increase: memory the driver, cuBLAS, NCCL and the custom all-reduce took outside
  torch's allocator since the engine's first snapshot (vllm/utils/mem_utils.py, memory_profiling);
- CUDA graph estimate: from v0.20.0 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 in
  vllm/envs.py) the memory a capture of every graph size will take comes off the pool
  (gpu_model_runner.py, profile_cudagraph_memory); none under --enforce-eager. Up to v0.19.x the
  estimate is off by default and the graphs are captured after the pool is sized.

Every term is a function of the config, the card and the settings; each says which vLLM file and
release it follows. Three constants are no figure of the source but of the allocator at run time
(bytes a sampler warm-up holds per logit, the non-torch increase, bytes a captured graph holds);
they are medians over the starts of models/pool_starts.yaml that are not held out
(scripts/pool_accuracy.py --fit prints them; tests/test_predict.py checks they still are).

A unified-memory box (GB10, Jetson) is not sized here: vLLM reads its free memory as MemAvailable
(vllm/utils/mem_utils.py, MemorySnapshot) and the start gate (calc/engine/gate.py) stays the answer.
"""

from __future__ import annotations

from calc.engine import hfconfig
from calc.engine.predict.cards import (
    HOPPER,
    NVLS_BOXES,
    SMALLEST_CARD,
    Card,
    card_from_total,
    card_of_box,
    find_box,
    flashinfer_runs_on,
    fp8_refused,
    is_hopper,
    is_sm100,
    is_sm120,
    is_turing,
    sold_size_note,
)
from calc.engine.predict.defaults import LATEST, MAX_MODEL_LEN, Batch, default_batch, default_utilization, patch_release, release
from calc.engine.predict.fixes import Fix, Limits, fixes, highest_utilization, limits
from calc.engine.predict.graphs import (
    CUDA_GRAPH_FULL_FIRST,
    CUDA_GRAPH_FULL_PER_LAYER,
    CUDA_GRAPH_PIECEWISE_FIRST,
    CUDA_GRAPH_PIECEWISE_PER_LAYER,
    FA3_SPLITS,
    FLASHINFER_WORKSPACE,
    GPT_OSS_CAPTURE,
    MIN_PER_GRAPH,
    V2_ARCHITECTURES,
    V2_ESTIMATE_FROM,
    V2_FULL_PER_LAYER,
    V2_MIN_PER_GRAPH,
    V2_PIECEWISE_PER_LAYER,
    Capture,
    attention_groups,
    capture_grid,
    capture_of,
    capture_sizes,
    cuda_graph,
    cuda_graph_estimate,
    fa3_split_buffers,
    first_capture,
    flashinfer_native_decode,
    flashinfer_workspace,
    full_graph_buffers,
    graph_counts,
    graph_sizes,
    mamba_graphs,
    model_runner_v2,
    piecewise_activations,
    v2_cuda_graph_estimate,
)
from calc.engine.predict.pool import (
    Given,
    Prediction,
    StagePool,
    Start,
    awq_checkpoint,
    batch_on,
    check_start,
    flashinfer_sampler,
    own_length,
    predict,
    scheduled,
)
from calc.engine.predict.terms import (
    AUTO_AWQ_FROM,
    AWQ_DEQUANT_TOKENS,
    COMBO_KERNELS_FROM,
    FLASHINFER_SAMPLER_BYTES_PER_LOGIT,
    MARLIN_DIRECT_UNTIL,
    MARLIN_FROM,
    MARLIN_METHODS,
    MARLIN_TURING_FROM,
    NON_TORCH_ONE_RANK,
    NON_TORCH_ONE_RANK_V0,
    NON_TORCH_PER_RANK_TP,
    NON_TORCH_PER_RANK_TP_NO_CUMEM,
    NON_TORCH_PER_RANK_TP_V0,
    PINNED_FROM,
    PINNED_UNTIL,
    SAMPLER_BYTES_PER_LOGIT,
    SAMPLER_TRITON_BYTES_PER_LOGIT,
    SORT_SEGMENTED_MIN_ROWS,
    SORT_TEMP_FULL,
    SORT_TEMP_SEGMENTED,
    TRITON_SAMPLER_MIN_ROWS,
    Term,
    compile_block,
    experts_per_token,
    flashinfer_bytes_per_logit,
    forward_peak,
    marlin_experts,
    marlin_moe_workspace,
    moe_chunk,
    moe_workspace,
    mxfp4_padding,
    nccl_cumem,
    non_torch,
    pinned_block,
    plain_awq,
    round_up,
    sampler_warmup,
    sort_bytes_per_logit,
)

__all__ = [
    "AUTO_AWQ_FROM",
    "AWQ_DEQUANT_TOKENS",
    "COMBO_KERNELS_FROM",
    "Batch",
    "CUDA_GRAPH_FULL_FIRST",
    "CUDA_GRAPH_PIECEWISE_FIRST",
    "FA3_SPLITS",
    "CUDA_GRAPH_FULL_PER_LAYER",
    "CUDA_GRAPH_PIECEWISE_PER_LAYER",
    "Card",
    "FLASHINFER_SAMPLER_BYTES_PER_LOGIT",
    "FLASHINFER_WORKSPACE",
    "Fix",
    "GPT_OSS_CAPTURE",
    "MIN_PER_GRAPH",
    "Given",
    "HOPPER",
    "LATEST",
    "Limits",
    "MAX_MODEL_LEN",
    "NON_TORCH_ONE_RANK",
    "NON_TORCH_ONE_RANK_V0",
    "NON_TORCH_PER_RANK_TP",
    "NON_TORCH_PER_RANK_TP_NO_CUMEM",
    "NON_TORCH_PER_RANK_TP_V0",
    "NVLS_BOXES",
    "Prediction",
    "SAMPLER_BYTES_PER_LOGIT",
    "MARLIN_DIRECT_UNTIL",
    "MARLIN_FROM",
    "MARLIN_METHODS",
    "SAMPLER_TRITON_BYTES_PER_LOGIT",
    "SORT_SEGMENTED_MIN_ROWS",
    "SORT_TEMP_FULL",
    "SORT_TEMP_SEGMENTED",
    "SMALLEST_CARD",
    "StagePool",
    "Start",
    "TRITON_SAMPLER_MIN_ROWS",
    "Term",
    "V2_ARCHITECTURES",
    "V2_ESTIMATE_FROM",
    "V2_FULL_PER_LAYER",
    "V2_MIN_PER_GRAPH",
    "V2_PIECEWISE_PER_LAYER",
    "Capture",
    "attention_groups",
    "batch_on",
    "capture_grid",
    "capture_of",
    "capture_sizes",
    "card_from_total",
    "sold_size_note",
    "card_of_box",
    "check_start",
    "cuda_graph",
    "cuda_graph_estimate",
    "default_batch",
    "default_utilization",
    "compile_block",
    "experts_per_token",
    "find_box",
    "flashinfer_runs_on",
    "fp8_refused",
    "fixes",
    "highest_utilization",
    "flashinfer_native_decode",
    "fa3_split_buffers",
    "first_capture",
    "flashinfer_sampler",
    "flashinfer_workspace",
    "full_graph_buffers",
    "graph_sizes",
    "flashinfer_bytes_per_logit",
    "forward_peak",
    "plain_awq",
    "MARLIN_TURING_FROM",
    "awq_checkpoint",
    "is_turing",
    "graph_counts",
    "hfconfig",
    "is_hopper",
    "is_sm100",
    "is_sm120",
    "limits",
    "mamba_graphs",
    "model_runner_v2",
    "piecewise_activations",
    "v2_cuda_graph_estimate",
    "moe_chunk",
    "moe_workspace",
    "mxfp4_padding",
    "nccl_cumem",
    "non_torch",
    "own_length",
    "pinned_block",
    "PINNED_FROM",
    "PINNED_UNTIL",
    "predict",
    "patch_release",
    "release",
    "round_up",
    "marlin_experts",
    "marlin_moe_workspace",
    "sampler_warmup",
    "sort_bytes_per_logit",
    "scheduled",
]
