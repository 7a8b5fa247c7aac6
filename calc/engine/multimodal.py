"""A multimodal model's start: its vision tower as the settings build it, and the encoder's share
of the profile run.

Read from vLLM's released sources:
- The tower's weights (calc/engine/weights.py, tower_tensors) are divided over the tensor-parallel ranks
  like the language model's, unless `--mm-encoder-tp-mode data` (from 0.11.0; before it
  `--enable-multimodal-encoder-data-parallel`) builds its layers with disable_tp: one whole copy
  a rank (vllm/model_executor/models/vision.py, is_vit_use_data_parallel, 0.33.0), in a model whose
  class sets supports_encoder_tp_data; for one that does not, vLLM warns "This model does not support
  `--mm-encoder-tp-mode data`" and builds the tower as under weights (vllm/config/model.py, 0.11.0 to
  0.33.0): Gemma 3, Gemma 3n, Gemma 4, Mistral 3 and LLaVA (gemma3_mm.py, gemma3n_mm.py, gemma4_mm.py, mistral3.py,
  llava.py: no release from 0.11.0 to 0.33.0 sets it).
- `--limit-mm-per-prompt` at 0 for every modality a tower serves leaves the tower unbuilt and
  unloaded, and the encoder unprofiled: Qwen2.5-VL, Qwen3-VL and Mistral 3 test the limit in
  their own __init__ from 0.11.0 (qwen2_5_vl.py, qwen3_vl.py, mistral3.py: `self.visual = None`;
  0.8.5 builds the tower whatever the limit), every model through _mark_tower_model from 0.15.0
  (vllm/model_executor/models/interfaces.py), Gemma 3, GLM-4V and InternVL from then only (gemma3_mm.py,
  glm4_1v.py, internvl.py: images and videos both at 0); Qwen2-VL's own __init__ tests it already in 0.10.1.1 (qwen2_vl.py),
  and so does LLaVA's (llava.py: `if multimodal_config.get_limit_per_prompt("image")`, 0.10.1.1 to 0.13.0; 0.8.5 and
  0.9.2 build its tower whatever the limit).
- The profile run (vllm/v1/worker/gpu_model_runner.py, profile_run, 0.11.0 to 0.33.0) first runs
  the encoder on a batch of dummy items of the largest modality and keeps their outputs in the
  encoder cache while the language model's dummy pass and the sampler run; it clears them after.
  The batch: encoder budget = max(max_num_encoder_input_tokens, the most tokens one item gives),
  where max_num_encoder_input_tokens = max_num_batched_tokens (vllm/config/scheduler.py;
  vllm/v1/core/encoder_cache_manager.py, compute_mm_encoder_budget), and items =
  max(1, min(budget // tokens an item, max_num_seqs x max(1, min(limit, max_model_len // tokens
  an item)))) (vllm/multimodal/encoder_budget.py, _get_max_items, 0.33.0). What stays is the
  outputs: items x tokens an item x the width the merger writes (Qwen3-VL's deepstack mergers
  add theirs) x the model's dtype.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, replace

from calc import jsontext
from calc.engine.hfconfig import Shape, Tower
from calc.units import InputError

MODES = ("weights", "data")
MODALITIES = ("image", "video", "audio")
MAX_ITEMS = 1_000_000


class PairLimits(dict[str, int]):
    """Limits written as image=0,video=0: vLLM 0.8.x's nullable_kvs read that form (its keys
    lowercased, a key given twice with two values refused: "Conflicting values specified for key");
    0.8.x warns it "will be removed in v0.10.0", and from 0.10.0 the flag takes JSON only
    (vllm/engine/arg_utils.py: parse_type(json.loads), no nullable_kvs in 0.10.1 or 0.11.0)."""


PAIRS_GONE = (0, 10)


def parse_limits(text: str) -> dict[str, int]:
    """--limit-mm-per-prompt as vLLM takes it: JSON ('{"image": 0, "video": 0}') or the older
    'image=0,video=0'. A modality's value is a count of items (a JSON object of options for it
    is read by its count)."""
    flag = "--limit-mm-per-prompt"
    body = text.strip()
    if not body:
        raise InputError(f'{flag}: found nothing, expected JSON such as \'{{"image": 0, "video": 0}}\' or image=0,video=0')
    if body.startswith("{"):
        try:
            data = jsontext.loads(body)
        except jsontext.JsonError as error:
            raise InputError(f'{flag}: found {error.found}, expected JSON such as \'{{"image": 0, "video": 0}}\'') from None
        if not isinstance(data, dict):
            raise InputError(f"{flag}: found {type(data).__name__}, expected a JSON object of counts")
        pairs = list(data.items())
    else:
        pairs = []
        for part in body.split(","):
            name, eq, value = part.partition("=")
            if not eq:
                raise InputError(f"{flag}: found {part.strip()!r}, expected modality=count, such as image=0")
            pairs.append((name.strip().lower(), value.strip()))
    out: dict[str, int] = {} if body.startswith("{") else PairLimits()
    for name, value in pairs:
        if name not in MODALITIES:
            raise InputError(f"{flag}: found modality {name!r}, expected one of {', '.join(MODALITIES)}")
        count = value.get("count") if isinstance(value, dict) else value
        if isinstance(count, str) and count.isascii() and count.isdigit() and len(count) <= 7:
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_ITEMS:
            raise InputError(f"{flag}: found {name}={count!r}, expected a count of items from 0 to {MAX_ITEMS:,}")
        if name in out and out[name] != count:
            raise InputError(f"{flag}: found {name}={out[name]} and {name}={count}, expected one count a modality")
        out[name] = count
    return out


@dataclass(frozen=True)
class Settings:
    """The multimodal flags of a start, as vLLM spells them."""

    mm_encoder_tp_mode: str = "weights"
    limits: dict[str, int] | None = None  # --limit-mm-per-prompt; None: vLLM's default, 999 a modality


def check(s: Settings) -> None:
    if s.mm_encoder_tp_mode not in MODES:
        raise InputError(f"--mm-encoder-tp-mode: found {s.mm_encoder_tp_mode!r}, expected weights or data")


# Classes whose model code sets no supports_encoder_tp_data (vllm/model_executor/models/interfaces.py), 0.11.0 to 0.33.0
# (gemma4_mm.py and gemma4_unified.py from their first release, 0.19.0 and 0.23.0)
NO_ENCODER_DATA = frozenset(
    {"Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration", "Mistral3ForConditionalGeneration", "LlavaForConditionalGeneration",
     "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration"}
)  # fmt: skip


def limit(s: Settings, modality: str) -> int:
    """The items of a modality one prompt may hold (vllm/config/multimodal.py: 999 unless limited)."""
    return 999 if s.limits is None else s.limits.get(modality, 999)


def limit_skips_from(architecture: str) -> tuple[int, int]:
    """The first release whose model code leaves the tower out when the limits allow none of its modalities."""
    if architecture.startswith(("Qwen2VL", "LlavaForConditionalGeneration")):
        return (0, 10)
    if architecture.startswith("KimiK25"):  # kimi_k25.py: _mark_tower_model(vllm_config, "vision_chunk") from 0.16.0, not in 0.15.0
        return (0, 16)
    return (0, 15) if architecture.startswith(("Gemma3", "Glm4v", "InternVL")) else (0, 11)


def skips_tower(tower: Tower, s: Settings, rel: tuple[int, int], architecture: str) -> bool:
    """Whether vLLM leaves the tower unbuilt: every modality it serves limited to 0, in a release
    whose model code tests the limit (Gemma 4 Unified's embedders never: gemma4_unified.py builds them
    without _mark_tower_model, 0.23.0 to 0.33.0)."""
    if tower.kind == "gemma4-unified":
        return False
    return all(limit(s, m) == 0 for m in tower.modalities) and rel >= limit_skips_from(architecture)


def apply(shape: Shape, s: Settings, rel: tuple[int, int]) -> tuple[Shape, list[str]]:
    """The model as this start builds it (the tower replicated, or gone), and what to say of it."""
    check(s)
    if s.mm_encoder_tp_mode == "data" and rel < (0, 11):
        raise InputError(
            f"--mm-encoder-tp-mode: found data with vLLM {rel[0]}.{rel[1]}, expected 0.11.0 or later "
            "(0.8.5 divides the tower over the ranks whatever is asked: its qwen2_5_vl.py has no data-parallel encoder)"
        )
    form = []
    if isinstance(s.limits, PairLimits) and rel >= PAIRS_GONE:
        written = ",".join(f"{k}={v}" for k, v in s.limits.items())
        form.append(
            f"--limit-mm-per-prompt {written}: vLLM {rel[0]}.{rel[1]} takes JSON only and refuses the key=value form "
            f"(vllm/engine/arg_utils.py, from 0.10.0); give it to vLLM as '{json.dumps(dict(s.limits))}'"
        )
    tower = shape.tower
    if tower is None:
        if s.limits is not None or s.mm_encoder_tp_mode != "weights":
            return shape, ["--limit-mm-per-prompt and --mm-encoder-tp-mode change nothing here: the config describes no vision tower", *form]
        return shape, form
    if skips_tower(tower, s, rel, shape.architecture):
        return replace(shape, tower=None), [
            f"--limit-mm-per-prompt allows no {' or '.join(tower.modalities)}: vLLM builds and loads no {tower.name} and profiles no encoder "
            "(vllm/model_executor/models/interfaces.py _mark_tower_model from 0.15.0; the model's own __init__ from 0.11.0)",
            *form,
        ]
    if tower.kind == "llama4-default":
        raise InputError(
            f"{shape.file}: vision_config: found nothing, expected the checkpoint's vision_config, or --limit-mm-per-prompt "
            f"'{{\"image\": 0}}' (vLLM {'.'.join(map(str, limit_skips_from(shape.architecture)))}.0 and later then build no tower: mllama4.py) "
            "to size the language model alone: "
            "transformers' Llama4Config fills a missing one with its default tower (Llama4VisionConfig, 5.5.3: 34 layers 768 wide), "
            "not the tower a Llama 4 checkpoint holds"
        )
    notes = form
    zero = [m for m in tower.modalities if limit(s, m) == 0]
    if zero and len(zero) < len(tower.modalities):
        left = [m for m in tower.modalities if limit(s, m) != 0]
        notes.append(
            f"--limit-mm-per-prompt allows no {' or '.join(zero)} but leaves {' and '.join(f'{m} at {limit(s, m)}' for m in left)}: "
            f"the {tower.name} is built, loaded and profiled; limit {' and '.join(left)} to 0 as well to leave it out"
        )
    if all(limit(s, m) == 0 for m in tower.modalities) and tower.kind == "gemma4-unified":
        notes.append(f"vLLM builds the {tower.name} whatever --limit-mm-per-prompt says (gemma4_unified.py, 0.23.0 to 0.33.0)")
    elif all(limit(s, m) == 0 for m in tower.modalities):
        notes.append(
            f"vLLM {rel[0]}.{rel[1]} builds the {tower.name} whatever --limit-mm-per-prompt says (the limit skips it from "
            + {(0, 10): "0.10.1.1", (0, 11): "0.11.0", (0, 15): "0.15.0", (0, 16): "0.16.0"}[limit_skips_from(shape.architecture)]
            + ")"
        )
    if s.mm_encoder_tp_mode == "data" and shape.architecture in NO_ENCODER_DATA:
        notes.append(f"--mm-encoder-tp-mode data: {shape.architecture} does not support it, and vLLM builds the {tower.name} divided "
                     "over the ranks as under weights ('Falling back to `--mm-encoder-tp-mode weights`', vllm/config/model.py)")  # fmt: skip
    elif s.mm_encoder_tp_mode == "data":
        tower = replace(tower, data_parallel=True)
    return replace(shape, tower=tower), notes


@dataclass(frozen=True)
class EncoderProfile:
    budget_tokens: int  # the encoder's compute budget, as vLLM's log line prints it
    items: int  # dummy items of the largest modality profiled at once
    tokens_per_item: int
    held_bytes: int  # the encoder's outputs, kept through the language model's dummy pass
    source: str
    forward_bytes: int = 0  # the tower's own forward over the batch, before the language model runs (encoder_forward_peak)
    patches: int = 0  # the patches the tower sees in that batch


def patches_per_item(tower: Tower) -> int:
    """The patches one item of the most tokens gives the tower: SigLIP (Gemma 3) sees its whole
    position table, (image_size / patch)^2, and its projector pools them to image_tokens
    (gemma3_mm.py Gemma3MultiModalProjector); Qwen2.5-VL, Qwen3-VL and Pixtral see
    image_tokens x spatial_merge_size^2 patches, which their merger folds by merge^2."""
    if tower.kind in ("siglip", "clip"):  # CLIP (LLaVA) sees its class token too
        return tower.positions or tower.image_tokens
    return tower.image_tokens * tower.merge * tower.merge


@dataclass(frozen=True)
class Item:
    """One dummy item of the modality the profile runs: what the encoder budget counts for it, the
    outputs it writes and the patches the tower sees."""

    modality: str
    tokens: int  # vLLM's most tokens an item of the modality (what the budget divides)
    rows: int  # the encoder outputs one item writes
    patches: int
    source: str = ""


QWEN2_VL_FRAMES = {(0, 8): 16, (0, 11): 14}  # qwen2_vl.py _MAX_FRAMES_PER_VIDEO: 16 in 0.8.5 and 0.10.1.1, 14 from 0.11.0 to 0.33.0
QWEN3_VL_VIDEO = (25165824, 4096)  # Qwen3-VL's video_preprocessor_config.json size: longest_edge, shortest_edge (pixels over a clip)
QWEN3_VL_FRAMES = 24576  # qwen3_vl.py _MAX_FRAMES_PER_VIDEO, 0.11.0 and 0.12.0


def _qwen3_video_tokens(frames: int, side: int, patch: int, merge: int, temporal: int) -> int:
    """The video tokens one clip of `frames` frames of side x side pixels gives, as
    transformers' Qwen3-VL video smart_resize sizes the frames (models/qwen3_vl/
    video_processing_qwen3_vl.py: the clip's pixels at most longest_edge) and vLLM counts them
    (qwen3_vl.py Qwen3VLProcessingInfo._get_vision_info, 0.11.0)."""
    factor = patch * merge
    longest, shortest = QWEN3_VL_VIDEO
    h_bar = w_bar = round(side / factor) * factor
    t_bar = round(frames / temporal) * temporal
    if t_bar * h_bar * w_bar > longest:
        beta = math.sqrt((frames * side * side) / longest)
        h_bar = w_bar = max(factor, math.floor(side / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < shortest:
        beta = math.sqrt(shortest / (frames * side * side))
        h_bar = w_bar = math.ceil(side * beta / factor) * factor
    grid_t = max((frames + frames % temporal) // temporal, 1)
    return grid_t * (h_bar // patch) * (w_bar // patch) // (merge * merge)


@functools.lru_cache(maxsize=64)
def _qwen3_video_frames(seq_len: int, side: int, patch: int, merge: int, temporal: int) -> int:
    """qwen3_vl.py _get_max_video_frames (from 2 frames, one more while the clip's tokens stay
    within max_model_len) capped by _MAX_FRAMES_PER_VIDEO (get_num_frames_with_most_features)."""
    if seq_len >= _qwen3_video_most(side, patch, merge, temporal):
        return QWEN3_VL_FRAMES  # no clip up to the cap outgrows the length: the loop runs to the cap
    frames = 2
    while frames < QWEN3_VL_FRAMES and _qwen3_video_tokens(frames + 1, side, patch, merge, temporal) <= seq_len:
        frames += 1
    return frames


@functools.lru_cache(maxsize=16)
def _qwen3_video_most(side: int, patch: int, merge: int, temporal: int) -> int:
    """The most tokens any clip of 3 to 24,576 frames gives (a length at least this lets every step pass)."""
    return max(_qwen3_video_tokens(n, side, patch, merge, temporal) for n in range(3, QWEN3_VL_FRAMES + 1))


def largest_item(tower: Tower, s: Settings, max_model_len: int, rel: tuple[int, ...]) -> Item:
    """The item of the modality with the most tokens, which the profile runs
    (get_modality_with_max_tokens: the first of the largest up to 0.16.x, the largest by
    (tokens, name) from 0.17.0, so a tie goes to video; vllm/v1/worker/utils.py 0.10.1.1 to
    0.14.0, vllm/multimodal/encoder_budget.py 0.17.0 to 0.33.0). Images give the processor's
    largest (Tower.image_tokens). A video, where the tower takes one and its limit allows it:
    - Qwen2.5-VL and Qwen2-VL (qwen2_vl.py get_num_frames_with_most_features): frames at the largest image
      size, as many as max_model_len holds (less one image's tokens up to 0.10.x), at most
      _MAX_FRAMES_PER_VIDEO, two frames a temporal patch; tokens = ceil(frames / 2) x an image's;
    - Qwen3-VL at 0.11.x and 0.12.x (qwen3_vl.py get_max_video_tokens): frames shrunk so the clip
      holds at most the video processor's longest_edge pixels, up to 24,576 of them, and the budget
      counts each soft token as 12.5 ('<{timestamp} seconds>' and the vision marks); from 0.13.0
      the images are the larger (a v0.20.0 start of Qwen3.6 profiles an image).
    An item of another modality, or a tower without video, is the image."""
    image = Item("image", tower.image_tokens, tower.image_tokens, patches_per_item(tower), "the processor's largest image")
    if limit(s, "video") == 0 or "video" not in tower.modalities:
        return image
    merge2 = tower.merge * tower.merge
    video: Item | None = None
    if tower.kind in ("qwen2.5-vl", "qwen2-vl"):
        cap = QWEN2_VL_FRAMES[(0, 8) if rel < (0, 11) else (0, 11)]
        room = max_model_len - (tower.image_tokens if rel < (0, 11) and limit(s, "image") > 0 else 0)
        frames = max(1, min(max(1, 2 * (room // tower.image_tokens)), cap))
        tokens = (frames + frames % 2) // 2 * tower.image_tokens
        video = Item("video", tokens, tokens, tokens * merge2, f"a video of {frames} frames at the largest image size (qwen2_vl.py, at most {cap} frames)")
    elif tower.kind == "qwen3-vl" and (0, 11) <= rel < (0, 13):
        side = math.isqrt(tower.image_tokens) * tower.patch * tower.merge
        frames = _qwen3_video_frames(max_model_len, side, tower.patch, tower.merge, tower.temporal_patch)
        soft = _qwen3_video_tokens(frames, side, tower.patch, tower.merge, tower.temporal_patch)
        video = Item("video", int(soft * 12.5), soft, soft * merge2,
                     f"a video of {frames:,} frames, {soft:,} tokens counted 12.5 each (qwen3_vl.py get_max_video_tokens, 0.11.0)")  # fmt: skip
    if video is None or limit(s, "image") > 0 and (video.tokens < image.tokens or video.tokens == image.tokens and rel < (0, 17)):
        return image
    return video


QWEN_011_SPLIT_UNTIL = (0, 11, 1)  # qwen2_5_vl.py split_qkv (all_gather_interleave, q/k/v copied contiguous): 0.11.0, gone in 0.11.1
QWEN_QK_CONTIGUOUS_FROM = (0, 15)  # qwen2_5_vl.py Qwen2_5_VisionAttention.forward: `qk_reshaped = qk_reshaped.contiguous()`, 0.15.0 on (not in 0.14.1)
QWEN_FLOAT32_ROTARY = ((0, 11), (0, 12))  # qwen2_vl.py apply_rotary_pos_emb_vision: `t.float()` and freqs.cos()/sin() in float32, 0.11.x


def attention_live(tower: Tower, tp: int, dtype_bytes: int, rel: tuple[int, ...]) -> tuple[int, str]:
    """Bytes a patch holds at the tower's attention peak beside the block's residual, and the
    vLLM code it follows; rel is (major, minor) or (major, minor, patch), (0, 11) read as 0.11.0.
    Qwen2.5-VL's attention, which Qwen3-VL's blocks build too (qwen3_vl.py Qwen3_VisionBlock:
    `self.attn = Qwen2_5_VisionAttention(...)`, 0.11.0 to 0.33.0), is called on the normed input
    (`self.attn(self.norm1(x), ...)`, qwen2_5_vl.py Qwen2_5_VisionBlock and qwen3_vl.py Qwen3_VisionBlock,
    0.11.0 to 0.33.0), which the call keeps among its arguments until the attention returns: one hidden,
    whole on every rank. It keeps its fused qkv output (3 x hidden / TP: q, k and v heads divided over
    the ranks under --mm-encoder-tp-mode weights) in `x` until it returns, and its last step,
    `self.proj(context_layer)`, a RowParallelLinear, writes one hidden and, above one rank, reduces it
    out of place into one more (linear.py RowParallelLinear.forward, parallel_state.py
    `_all_reduce_out_place`, pynccl.py all_reduce `torch.empty_like`, 0.11.0 to 0.33.0). The context
    layer's `rearrange(output, "(b s) h d -> s b (h d)").contiguous()` copies nothing: the tower runs
    with b = 1 (`hidden_states.unsqueeze(1)`), and PyTorch skips size-1 dimensions when it tests
    contiguity (c10/core/Contiguity.h `_compute_contiguous`), so `.contiguous()` returns the tensor.
    - 0.11.0 (qwen2_5_vl.py Qwen2_5_VisionAttention.forward and split_qkv): above one rank split_qkv
      first gathers every rank's qkv whole (all_gather_interleave: a list of TP tensors, 3 x hidden,
      then their torch.cat, 3 x hidden more, beside the rank's own 3 x hidden / TP); q, k and v are
      copied contiguous (3 x hidden / TP), q and k concatenated (2 x hidden / TP) and rotated in
      float32 (qwen2_vl.py apply_rotary_pos_emb_vision: `t.float()`, vllm_flash_attn's apply_rotary
      writing a float32 `torch.empty_like`, the cast back, and the cosines and sines of the
      float32 rotary table, half a head each); then the rotated q and k, v's copy, qk_concat and
      FlashAttention's output (one hidden / TP) are all held as the projection writes. The peak is
      the larger of the gather, the rotation and the projection: at TP 1 the rotation, 38 x hidden
      bytes in bfloat16 and the tables; at TP 4 the gather.
    - 0.11.1 and 0.11.2 gather nothing and copy no q, k, v: q and k are rearranged
      (`"b s two head head_dim -> (two b) s head head_dim"`), which at b = 1 merges a size-1 dimension
      and so is a view (torch's reshape, as numpy's, skips size-1 dimensions when it computes the
      strides), rotated in float32 as in 0.11.0 (`t.float()` makes the first copy), v stays a view of
      the qkv output (qwen2_5_vl.py, 0.11.1 and 0.11.2; 0.18.0 adds `qk_reshaped.contiguous()`).
    - 0.8.x to 0.10.x copies q, k and v and rotates q, then k, each alone in float32: 11 x hidden / TP
      (read before; the normed input and a gather under TP not counted there).
    - from 0.12.0 q and k are rotated in the model's dtype (2 x hidden; ApplyRotaryEmb without
      enable_fp32_compute from 0.13.0), from 0.15.0 after their rearrangement is copied contiguous
      (`qk_reshaped.contiguous()`, 2 x hidden; up to 0.14.x the rotation reads the view and
      vllm_flash_attn's apply_rotary writes one new tensor, `torch.empty_like`), v stays a view,
      and FlashAttention's varlen kernel writes the output (one hidden): at the projection 8 x hidden
      divided over the ranks, with the normed input and the projection's output (and its reduced
      copy above one rank) whole (read in 0.12.0, 0.13.0, 0.18.0, 0.24.0, 0.28.0 and 0.33.0);
    - Qwen2-VL's own attention (qwen2_vl.py Qwen2VisionAttention.forward) is written as Qwen2.5-VL's in
      0.10.1.1 and 0.11.0, its gather vLLM's all_gather (a buffer of 3 x hidden and its reshaped copy);
      in 0.11.1, 0.11.2 and 0.12.0 its split_qkv gathers nothing and q, k, v stay views, q and k
      concatenated (2 x hidden / TP) and rotated in float32 up to 0.11.2, the same count; from 0.13.0 it
      concatenates q and k and rotates them in the model's dtype, the same count again, but split_qkv
      gathers the fused qkv from every rank again at TP above 1 (not modeled);
    - other towers: the normed input, the fused qkv output, the attention's output and out_proj's
      (1 + 3 + 1 + 1 x hidden; the varlen kernel keeps no patches x patches scores)."""
    h, t, d = tower.hidden, tp, dtype_bytes
    if tower.kind in ("qwen2.5-vl", "qwen3-vl", "qwen2-vl"):
        reduced = h if t > 1 else 0  # the projection's all-reduce, out of place
        if QWEN_FLOAT32_ROTARY[0] <= rel < QWEN_FLOAT32_ROTARY[1]:
            first = rel < QWEN_011_SPLIT_UNTIL
            gathers = t > 1 and first
            copies = 3 * h // t if first else 0  # q, k and v copied contiguous
            v_copy = h // t if first else 0
            qk = 2 * h // t if first or tower.kind == "qwen2-vl" else 0  # qk_concat (torch.cat); 0.11.1's rearranged qk is a view
            tables = (h // tower.heads if tower.heads else 0) * 4  # cos and sin, float32, half a head each
            rotation = (3 * h // t + copies + qk + 2 * h // t) * d + (4 * h // t) * 4 + tables
            projection = (3 * h // t + v_copy + qk + 2 * h // t + h // t + h + reduced) * d
            gather = (3 * h // t + 6 * h) * d if gathers else 0
            live = h * d + max(rotation, projection, gather)
            if first:
                return live, ("qwen2_5_vl.py Qwen2_5_VisionAttention.forward, 0.11.0: q, k and v copied, qk concatenated and rotated in float32"
                              + (", the qkv gathered whole from every rank (split_qkv)" if gathers else ""))  # fmt: skip
            return live, ("qwen2_5_vl.py Qwen2_5_VisionAttention.forward, 0.11.1 and 0.11.2: qk rotated in float32" if not qk else
                      "qwen2_vl.py Qwen2VisionAttention.forward, 0.11.1 and 0.11.2: qk concatenated and rotated in float32")  # fmt: skip
        if rel < (0, 11):
            live = (6 * h // t) * d + (2 * h // t) * 4 + (h // t) * d
            return live, "qwen2_5_vl.py Qwen2_5_VisionAttention.forward, 0.10.1.1: q and k rotated in float32 one at a time"
        if rel < QWEN_QK_CONTIGUOUS_FROM and tower.kind != "qwen2-vl":  # the rearranged qk a view, rotated into one new tensor
            return (2 * h + 6 * h // t + reduced) * d, (
                "qwen2_5_vl.py Qwen2_5_VisionAttention.forward, 0.12.0 to 0.14.x: qk rotated in the model's dtype from a view, "
                "the projection's output written beside them" + (" and reduced out of place" if reduced else "")
            )
        return (2 * h + 8 * h // t + reduced) * d, (
            "qwen2_5_vl.py Qwen2_5_VisionAttention.forward, 0.15.0 to 0.33.0: qk copied once and rotated in the model's dtype, "
            "the projection's output written beside them" + (" and reduced out of place" if reduced else "")
        )
    return (h + (3 * h + h) // t + h) * d, "the fused qkv, the attention's output and out_proj's, from the model code"


def encoder_forward_peak(
    tower: Tower, items: int, tp: int, dtype_bytes: int, rel: tuple[int, ...] = (0, 33), patches_each: int | None = None
) -> tuple[int, int]:
    """(bytes, patches) of the tower's forward pass over the profile's dummy batch, read from the
    model code (vllm/model_executor/models/siglip.py SiglipEncoderLayer, qwen2_5_vl.py
    Qwen2_5_VisionBlock, qwen3_vl.py Qwen3_VisionBlock, pixtral.py TransformerBlock, 0.19.0), the
    tower run on every item at once (gemma3_mm.py _process_image_input: vision_tower(pixel_values)):
    - the pixels, alive through the whole pass (the batch holds them): from 0.10 vLLM casts every
      floating tensor the processor returns to the model's dtype (vllm/inputs/registry.py
      call_hf_processor, 0.10.1.1; vllm/multimodal/processing.py _postprocess_output, 0.11.0;
      processing/context.py, 0.19.0 to 0.33.0: "this emulates output.to(dtype=...)"), so they
      are patches x channels x temporal_patch x patch^2 x the dtype's bytes, and the towers' own
      casts (siglip.py `pixel_values.to(dtype=target_dtype)`, qwen2_5_vl.py `x.to(dtype=self.dtype)`)
      change nothing; 0.8.x keeps the processor's float32 (4 bytes a value), whose cast inside the
      tower is dropped at the patch embedding;
    - in a block, the residual and the larger of the attention's peak (attention_live) and the
      MLP's: the normed input and fc1 with its activation (2 x intermediate / TP; a gated MLP's
      gate_up and its product, 3 x intermediate / TP);
    - in 0.11.x the Qwen towers' rotary table, float32, half a head a patch, alive through every block
      (qwen2_5_vl.py and qwen3_vl.py forward: `rotary_pos_emb`, rot_pos_emb's `rotary_pos_emb_full[pos_ids]`
      of Qwen2_5_VisionRotaryEmbedding's float32 inv_freq, 0.11.0 to 0.11.2; qwen3_vl_carried from 0.12.0).
    The tower is divided over the TP ranks unless --mm-encoder-tp-mode data builds it whole on each
    (then every rank is counted with the whole batch). One start's tower sets the peak at 0.11.0:
    Qwen2.5-VL-3B on an L4 (models/pool_starts.yaml; its pool 1.5 % under, the non-torch memory taken
    at the one-GPU median of H100 starts, 0.25 GiB, where the log leaves 0.11 GiB); the v0.28.0 starts of
    Qwen3-VL-8B print peaks within their rounding (test_multimodal.py); Gemma 3's and Pixtral's starts of
    v0.19.0 print peaks the sampler's warm-up sets, above this one."""
    n = items * (patches_each if patches_each is not None else patches_per_item(tower))
    t = 1 if tower.data_parallel else tp
    h, i, d = tower.hidden, tower.intermediate, dtype_bytes
    gated = tower.kind in ("qwen2.5-vl", "pixtral")
    attention, _ = attention_live(tower, t, d, rel)
    mlp = (h + (3 * i if gated else 2 * i) // t) * d
    pixel = 4 if rel < (0, 10) else d
    seen = n - items if tower.kind == "clip" else n  # CLIP's class token is a position without pixels
    pixels = seen * tower.channels * tower.temporal_patch * tower.patch * tower.patch * pixel
    rotary = n * (h // tower.heads // 2) * 4 if is_qwen_float32_rotary(tower, rel) else 0
    return n * (h * d + max(attention, mlp)) + pixels + rotary + qwen3_vl_carried(tower, n, d, rel), n


def is_qwen_float32_rotary(tower: Tower, rel: tuple[int, ...]) -> bool:
    """Whether the tower carries a float32 rotary table through its blocks (0.11.x Qwen towers)."""
    return tower.kind in ("qwen2.5-vl", "qwen3-vl", "qwen2-vl") and bool(tower.heads) and QWEN_FLOAT32_ROTARY[0] <= rel < QWEN_FLOAT32_ROTARY[1]


QWEN3_VL_ROTARY_FROM = (0, 12)  # qwen3_vl.py rot_pos_emb: cos and sin gathered from the RotaryEmbedding's cache, 0.12.0 to 0.33.0


def qwen3_vl_carried(tower: Tower, patches: int, dtype_bytes: int, rel: tuple[int, ...] = (0, 33)) -> int:
    """What Qwen3-VL's tower carries through its blocks beside each block's own peak
    (qwen3_vl.py Qwen3_VisionTransformer.forward, read in 0.24.0, 0.28.0 and 0.33.0): the
    interpolated position embeddings, a local (`pos_embeds`) alive through the loop, a patch x hidden,
    and the deepstack features, each merger's output kept in `deepstack_feature_lists` from its layer
    on (patches / merge^2 rows x out_hidden each), all of them alive in the blocks after the last one.
    From 0.12.0 also the rotary cosines and sines every block reads (rot_pos_emb: `cos[pos_ids].flatten(1)`
    and the same of sin, read in 0.12.0, 0.13.0, 0.18.0, 0.24.0, 0.28.0 and 0.33.0): the rotary
    embedding covers half a head (rotary_dim head_dim // 2, or partial_rotary_factor 0.5 from 0.13.0),
    its cache built in the model's dtype (rotary_embedding/base.py `cache.to(dtype)`), and each of
    the two gathers a patch's height and width halves: a patch x rotary_dim each.
    Zero for any other tower."""
    if tower.kind != "qwen3-vl":
        return 0
    rows = patches // (tower.merge * tower.merge)
    rotary = 2 * patches * (tower.hidden // tower.heads // 2) * dtype_bytes if rel >= QWEN3_VL_ROTARY_FROM and tower.heads else 0
    return patches * tower.hidden * dtype_bytes + tower.deepstack * rows * tower.out_hidden * dtype_bytes + rotary


def encoder_profile(
    shape: Shape, s: Settings, max_num_batched_tokens: int, max_num_seqs: int, max_model_len: int, rel: tuple[int, ...] = (0, 33), tp: int = 1
) -> EncoderProfile | None:
    """The encoder's batch in the profile run and the outputs it leaves for the rest of the run;
    None when the model has no tower, the limits leave it unbuilt (apply first), or the engine is
    V0 (before 0.8, not read here). vLLM 0.8.x rounds the items up and caps them by the
    sequences x the prompt's limit alone (gpu_model_runner.py profile_run, 0.8.5: cdiv(encoder_budget,
    max_tokens_per_mm_item)); from 0.10 they are rounded down and each prompt holds at most
    max_model_len // tokens an item (vllm/v1/worker/utils.py MultiModalBudget.get_max_items,
    0.10.1.1 and 0.11.0; vllm/multimodal/encoder_budget.py _get_max_items, 0.20.0 to 0.33.0;
    0.9.x not read)."""
    tower = shape.tower
    if tower is None or tower.image_tokens <= 0 or rel < (0, 8):
        return None
    item = largest_item(tower, s, max_model_len, rel)
    per_item, cap = item.tokens, limit(s, item.modality)
    budget = max(max_num_batched_tokens, per_item)
    if rel < (0, 10):
        items = min(-(-budget // per_item), max_num_seqs * cap)
    else:
        per_prompt = max(1, min(cap, max_model_len // per_item))
        items = max(1, min(budget // per_item, max_num_seqs * per_prompt))
    width = tower.out_hidden * (1 + tower.deepstack)
    # 0.11.x widens each item's outputs shorter than the budget to the whole budget before it keeps
    # them (gpu_model_runner.py profile_run, 0.11.0: output.new_zeros((encoder_budget, hidden))); 0.12.x
    # to the most tokens an item gives (max_tokens_by_modality); 0.13.0 keeps them as written.
    rows = item.rows
    if (0, 11) <= rel < (0, 12) and rows < budget:
        rows = budget
    elif (0, 12) <= rel < (0, 13) and rows < per_item:
        rows = per_item
    held = items * rows * width * shape.dtype_bytes
    forward, patches = encoder_forward_peak(tower, items, tp, shape.dtype_bytes, rel, item.patches)
    return EncoderProfile(
        budget,
        items,
        per_item,
        held,
        f"vllm/v1/worker/gpu_model_runner.py profile_run, {'0.8.5' if rel < (0, 10) else '0.10.1.1 to 0.33.0'}: 'Encoder cache will be initialized with a budget of {budget} tokens, "
        f"and profiled with {items} {item.modality} items of the maximum feature size' ({item.source}); their outputs ({rows:,} tokens x {width:,} wide"
        f"{' each, widened' if rows != item.rows else ''}) stay through the dummy pass",
        forward,
        patches,
    )


DEEPSTACK_SOURCE = ("deepstack input buffers, max_num_batched_tokens x the text hidden size each, allocated as the model is built "
                    "(qwen3_vl.py Qwen3VLForConditionalGeneration.__init__: deepstack_input_embeds, read in 0.24.0, 0.28.0 and 0.33.0)")  # fmt: skip


V2_ENCODER_FIRST_STAGE_FROM = (0, 28)  # gpu/model_runner.py profile_run: `supports_mm_inputs and is_first_pp_rank`, read in 0.28.0 to 0.33.0
V2_TOWER_FIRST_STAGE_FROM = (0, 33)  # interfaces.py _mark_tower_model: `use_v2_model_runner and not is_first_rank`, 0.33.0 (not in 0.32.0)


def tower_stages(rank: int, rel: tuple[int, int], v2: bool) -> tuple[bool, bool]:
    """Whether pipeline stage `rank` builds the vision tower (and Qwen3-VL's deepstack buffers beside
    it), and whether its profile runs the encoder. The V1 model runner builds the tower on every stage
    and profiles the encoder on each (gpu_model_runner.py profile_run has no stage check, read in
    0.11.0, 0.18.0, 0.24.0 and 0.31.0); Model Runner V2 profiles it on the first stage alone from
    v0.28.0 and, from v0.33.0, builds the tower there alone (a StageMissingLayer after it). V2 before
    v0.28.0 is taken as V1, the safe side."""
    first = rank == 0
    return (first or not (v2 and rel >= V2_TOWER_FIRST_STAGE_FROM), first or not (v2 and rel >= V2_ENCODER_FIRST_STAGE_FROM))


def deepstack_buffers(shape: Shape, max_num_batched_tokens: int) -> int:
    """The buffers Qwen3-VL builds with the model for its deepstack features (DEEPSTACK_SOURCE): one a
    deepstack merger, max_num_batched_tokens x hidden in the model's dtype, inside 'Model loading
    took'; zero for another model or where the limits leave the tower unbuilt (v0.28.0 and v0.33.0 build
    them only beside the tower, on each pipeline stage that builds it, tower_stages; v0.24.0 builds them
    regardless, which is not counted)."""
    tower = shape.tower
    if tower is None or tower.kind != "qwen3-vl" or not tower.deepstack:
        return 0
    return tower.deepstack * max_num_batched_tokens * shape.hidden * shape.dtype_bytes
