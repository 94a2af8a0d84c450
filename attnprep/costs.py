"""What each attention variant costs: parameters, forward FLOPs and KV cache (`attnprep compare`).

The numbers are measured, not typed in: every variant is the project's own reference solution
(``attnprep.solutions``), constructed on the ``meta`` device (shapes only, so a 7168-wide model
allocates nothing) and run once in ``eval()`` mode with ``is_causal=True`` under
``torch.utils.flop_counter.FlopCounterMode``. FlopCounterMode counts every matmul in full
(2·m·n·k per matmul, the bias add of a Linear and the elementwise work — softmax, RMSNorm, RoPE,
masking — not counted), so the causal flag does not change the count: the reference computes the
whole (T, T) score matrix and masks it, as a naive implementation does.

Per variant (one attention layer):

- ``params``: ``sum(p.numel())`` of the module.
- ``flops``: forward FLOPs for ``batch`` sequences of ``seq`` tokens (a prefill).
- ``kv_elements_per_token``: the numbers a decoder caches per token, read from the module's layer
  sizes: MHA/MQA/GQA ``k_proj.out_features + v_proj.out_features`` (2·H·d_h, 2·d_h, 2·G·d_h); MLA
  naive caches the decompressed keys and values, ``H·(nope+rope) + H·v``; MLA absorbed caches the
  compressed latent and the shared RoPE key, ``kv_lora_rank + rope`` (``wkv_a.out_features``).
- bytes = elements × the size of ``dtype``; totals = per token × batch × seq. ``dtype`` changes
  only the bytes: the modules are measured in float32 on ``meta``.

Presets (every field filled; explicit sizes override any of them):

============  =====  ===  ===  ===  =======  ========  ====  ====  ===  =====  ===  =====
preset        d      H    d_h  G    q_lora   kv_lora   nope  rope  v    batch  seq  dtype
============  =====  ===  ===  ===  =======  ========  ====  ====  ===  =====  ===  =====
llama2-7b     4096   32   128  8    1536     512       128   64    128  1      4096 bf16
llama3-8b     4096   32   128  8    1536     512       128   64    128  1      4096 bf16
deepseek-v3   7168   128  128  8    1536     512       128   64    128  1      4096 bf16
seed          256    8    32   4    128      64        32    16    32   2      10   fp32
============  =====  ===  ===  ===  =======  ========  ====  ====  ===  =====  ===  =====

H = num_heads, d_h = head_dim of the MHA, MQA and GQA rows (the model's real one), G =
num_kv_heads (the GQA row). ``llama3-8b`` is the default: it is the shape most people have in mind
and its GQA row is the real model. DeepSeek-V3's MHA row is the one DeepSeek-V2's paper compares
MLA with: the same 128 heads of 128, so 2·128·128 = 32,768 cached elements per token per layer
against MLA's 576, although 128·128 = 16,384 is wider than d_model = 7168. Overriding d_model or
num_heads without head_dim derives it as d_model / num_heads (the textbook relation).

The reference MHA, MQA and GQA read their inner width from ``x`` (``B, T, C = x.shape``) and so
assume H·d_h = d_model. For a shape where it is not (DeepSeek-V3), :func:`build` constructs them at
the inner width H·d_h and then gives them the model's own projections: q/k/v map d_model → heads
and o_proj maps H·d_h → d_model, and q/k/v are fed a (B, T, d_model) input by a pre-hook. Every
matmul the forward runs then has the real sizes (only on ``meta``: the hook makes no real data). The MLA sizes of the Llama presets are
DeepSeek-V3's own (Llama's head_dim is 128 like DeepSeek's nope/v head dims: nope = v = 128,
rope = 64, kv_lora_rank = 4·128, q_lora_rank = 12·128); the GQA row of ``llama2-7b`` and
``deepseek-v3`` uses 8 KV heads as Llama-2-70B and Llama-3 do. The ``seed`` preset is the seed
notes' 256-wide, 8-head example (head_dim 32) with MLA scaled down the same way but with ranks
below d_model so the bottlenecks still compress: nope = v = 32, rope = 16, kv_lora_rank = 64,
q_lora_rank = 128.

This module prints nothing and imports torch only inside :func:`measure` (and the helpers it
calls), so the preset data can be read without torch.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import operator
from dataclasses import dataclass
from typing import Any, Callable

JSON_VERSION = 2  # 2: relative["kv_elements"] (1 called it "kv_cache")

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}

IS_CAUSAL = True  # the forward that is counted; FlopCounterMode counts full matmuls either way


class CompareError(ValueError):
    """A preset, dtype or size that cannot be compared; ``str()`` is one line for the user."""


@dataclass(frozen=True)
class Shape:
    """One model shape: every size any of the five variants needs, plus the workload."""

    d_model: int
    num_heads: int
    head_dim: int  # of the MHA, MQA and GQA rows; H·head_dim may differ from d_model (DeepSeek-V3)
    num_kv_heads: int  # the GQA row
    q_lora_rank: int  # the MLA rows from here on
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    batch: int
    seq: int
    dtype: str  # a key of DTYPE_BYTES

    @property
    def inner_dim(self) -> int:
        """H·d_h: the width of the MHA/MQA/GQA queries (and of MHA's keys and values)."""
        return self.num_heads * self.head_dim

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def problems(self) -> list[str]:
        """Why these sizes cannot be built (empty when they can)."""
        from attnprep import texts

        found = [texts.t("compare_error.not_positive", name=f.name, value=getattr(self, f.name))
                 for f in dataclasses.fields(self)
                 if f.name != "dtype" and not (isinstance(getattr(self, f.name), int) and getattr(self, f.name) > 0)]
        if found:
            return found
        if self.dtype not in DTYPE_BYTES:
            found.append(texts.t("compare_error.unknown_dtype", dtype=self.dtype, choices=", ".join(DTYPE_BYTES)))
        if self.num_heads % self.num_kv_heads:
            found.append(texts.t("compare_error.kv_heads", heads=self.num_heads, kv_heads=self.num_kv_heads))
        if self.qk_rope_head_dim % 2:
            found.append(texts.t("compare_error.rope_odd", dim=self.qk_rope_head_dim))
        return found

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "dtype_bytes": self.dtype_bytes}


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    shape: Shape


def _deepseek_like_mla(head_dim: int) -> dict[str, int]:
    """DeepSeek-V3's MLA head sizes, expressed in its head_dim of 128."""
    return dict(q_lora_rank=12 * head_dim, kv_lora_rank=4 * head_dim, qk_nope_head_dim=head_dim,
                qk_rope_head_dim=head_dim // 2, v_head_dim=head_dim)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("llama2-7b", "Llama-2-7B-like: MHA, d_model 4096, 32 heads",
               Shape(d_model=4096, num_heads=32, head_dim=128, num_kv_heads=8, **_deepseek_like_mla(128),
                     batch=1, seq=4096, dtype="bf16")),
        Preset("llama3-8b", "Llama-3-8B-like: GQA, d_model 4096, 32 heads, 8 KV heads",
               Shape(d_model=4096, num_heads=32, head_dim=128, num_kv_heads=8, **_deepseek_like_mla(128),
                     batch=1, seq=4096, dtype="bf16")),
        Preset("deepseek-v3", "DeepSeek-V3-like: MLA, d_model 7168, 128 heads of 128, kv_lora_rank 512",
               Shape(d_model=7168, num_heads=128, head_dim=128, num_kv_heads=8, q_lora_rank=1536,
                     kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
                     batch=1, seq=4096, dtype="bf16")),
        Preset("seed", "the seed notes' example: d_model 256, 8 heads, GQA with 4 KV heads",
               Shape(d_model=256, num_heads=8, head_dim=32, num_kv_heads=4, q_lora_rank=128, kv_lora_rank=64,
                     qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
                     batch=2, seq=10, dtype="fp32")),
    )
}

DEFAULT_PRESET = "llama3-8b"

# The model's own sizes: given any of them, GQA's KV heads and MLA's sizes are derived from them
# (derived_sizes) instead of kept from the preset, which made an incoherent shape (a 4096-wide
# preset's kv_lora_rank of 512 on a 256-wide model; 8 KV heads for 8 heads, GQA silently = MHA).
MODEL_SIZES = frozenset({"d_model", "num_heads", "head_dim"})
SIZES = ("d_model", "num_heads", "head_dim", "num_kv_heads", "q_lora_rank", "kv_lora_rank",
         "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


def derived_sizes(base: Shape, sizes: dict[str, Any]) -> dict[str, int]:
    """GQA's KV heads and MLA's sizes for a model of ``sizes`` (d_model, num_heads, head_dim), the
    way the presets are made: the preset's query heads per KV head; MLA as DeepSeek-V3 in units of
    head_dim (nope = v = head_dim, rope = head_dim / 2, kv_lora_rank = 4·head_dim, q_lora_rank =
    12·head_dim), its ranks at most d_model / 4 and d_model / 2 so that the latents compress (the
    seed preset's rule). {} when the sizes are not positive integers (resolve() says why)."""
    d, h, hd = sizes["d_model"], sizes["num_heads"], sizes["head_dim"]
    if not all(isinstance(n, int) and n > 0 for n in (d, h, hd)):
        return {}
    group = max(1, base.num_heads // base.num_kv_heads)
    kv_heads = next(k for k in range(max(1, h // group), 0, -1) if h % k == 0)
    return dict(num_kv_heads=kv_heads, qk_nope_head_dim=hd, v_head_dim=hd, qk_rope_head_dim=max(2, hd // 2 // 2 * 2),
                kv_lora_rank=max(1, min(4 * hd, d // 4)), q_lora_rank=max(1, min(12 * hd, d // 2)))


def resolve(preset: str = DEFAULT_PRESET, **overrides: int | str | None) -> Shape:
    """The preset's shape with the given fields replaced (``None`` = keep the preset's value).
    ``head_dim``, unless given, is the preset's own, or d_model / num_heads when either is given.

    Raises :class:`CompareError` for an unknown preset, an unknown field or sizes that cannot be built.
    """
    from attnprep import texts

    key = preset.strip().lower()
    if key not in PRESETS:
        close = difflib.get_close_matches(key, list(PRESETS), n=2, cutoff=0.4)
        said = texts.t("compare_error.or").join(repr(c) for c in close)
        hint = texts.t("compare_error.did_you_mean", close=said) if close else ""
        raise CompareError(texts.t("compare_error.unknown_preset", preset=preset, hint=hint, choices=", ".join(PRESETS)))
    names = {f.name for f in dataclasses.fields(Shape)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise CompareError(texts.t("compare_error.unknown_size", name=unknown[0], known=", ".join(sorted(names))))
    given = {k: v for k, v in overrides.items() if v is not None}
    base = PRESETS[key].shape
    if given.get("head_dim") is None and ({"d_model", "num_heads"} & set(given)):
        d, h = given.get("d_model", base.d_model), given.get("num_heads", base.num_heads)
        if isinstance(d, int) and isinstance(h, int) and d > 0 and h > 0:
            if d % h:
                raise CompareError(texts.t("compare_error.head_dim", d=d, h=h))
            given["head_dim"] = d // h
    if MODEL_SIZES & set(given):  # the sizes that follow from the model's, unless given too
        for name, value in derived_sizes(base, {**dataclasses.asdict(base), **given}).items():
            given.setdefault(name, value)
    shape = dataclasses.replace(base, **given)
    if isinstance(shape.dtype, str):
        shape = dataclasses.replace(shape, dtype=shape.dtype.strip().lower())
    problems = shape.problems()
    if problems:
        raise CompareError(texts.t("shell.semicolon").join(problems))
    return shape


# --- the five variants -------------------------------------------------------------------------


def _attention_cache(module) -> int:
    """MHA, MQA, GQA: the key and value heads, as projected."""
    return module.k_proj.out_features + module.v_proj.out_features


def _mla_naive_cache(module) -> int:
    """Naive MLA caches the decompressed per-head keys [k_nope; k_pe] and values."""
    rope = module.wkv_a.out_features - module.kv_norm.weight.numel()  # the shared k_pe
    return module.wkv_b.out_features + module.num_heads * rope  # H·(nope+v) + H·rope


def _mla_absorbed_cache(module) -> int:
    """Absorbed MLA caches kv_norm(c_kv) and the roped k_pe: all of wkv_a's output."""
    return module.wkv_a.out_features  # kv_lora_rank + rope


def _mla_args(s: Shape) -> dict[str, int]:
    return dict(d_model=s.d_model, num_heads=s.num_heads, q_lora_rank=s.q_lora_rank,
                kv_lora_rank=s.kv_lora_rank, qk_nope_head_dim=s.qk_nope_head_dim,
                qk_rope_head_dim=s.qk_rope_head_dim, v_head_dim=s.v_head_dim)


@dataclass(frozen=True)
class Variant:
    key: str  # the id in the JSON ("mla_absorbed")
    label: str  # the row name in the table
    solution: str  # module under attnprep.solutions
    cls: str
    args: Callable[[Shape], dict[str, int]]  # MHA/MQA/GQA: built at the inner width H·d_h (see build)
    cache: Callable[[Any], int]  # cached elements per token per layer, from the built module
    cached: str  # what is cached, for the reader
    formula: Callable[[Shape], str]  # the cache per token as the interview answer, with numbers


def _variant(label: str, cls: str, args, cache, cached: str, formula, *, module: str | None = None) -> Variant:
    """A variant measured with the reference class ``cls``: of the exercise whose contract names it
    (its id keys the variant, and its reference module is built), else of ``module`` under
    attnprep.solutions (the absorbed MLA, a reference without an exercise of its own)."""
    if module is None:
        from attnprep import exercises

        owner = next(ex for ex in exercises.registry().values() if cls in ex.contract.objects)
        key, module = owner.id, owner.solution_module.rpartition(".")[2]
    else:
        key = module
    return Variant(key, label, module, cls, args, cache, cached, formula)


VARIANTS: tuple[Variant, ...] = (
    _variant("MHA", "MultiHeadAttention",
             lambda s: dict(d_model=s.inner_dim, num_heads=s.num_heads),
             _attention_cache, "K, V: H heads",
             lambda s: f"2·H·d_h = 2·{s.num_heads}·{s.head_dim}"),
    _variant("MQA", "MultiQueryAttention",
             lambda s: dict(d_model=s.inner_dim, num_heads=s.num_heads),
             _attention_cache, "K, V: 1 head",
             lambda s: f"2·d_h = 2·{s.head_dim}"),
    _variant("GQA", "GroupedQueryAttention",
             lambda s: dict(d_model=s.inner_dim, num_heads=s.num_heads, num_kv_heads=s.num_kv_heads),
             _attention_cache, "K, V: G heads",
             lambda s: f"2·G·d_h = 2·{s.num_kv_heads}·{s.head_dim}"),
    _variant("MLA (naive)", "MultiHeadLatentAttention",
             _mla_args, _mla_naive_cache, "decompressed K, V",
             lambda s: (f"H·(nope+rope) + H·v = {s.num_heads}·{s.qk_nope_head_dim + s.qk_rope_head_dim}"
                        f" + {s.num_heads}·{s.v_head_dim}")),
    _variant("MLA (absorbed)", "AbsorbedMultiHeadLatentAttention",
             _mla_args, _mla_absorbed_cache, "c_kv + k_pe",
             lambda s: f"kv_lora_rank + rope = {s.kv_lora_rank} + {s.qk_rope_head_dim}", module="mla_absorbed"),
)


# --- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    variant: str
    label: str
    cached: str
    kv_formula: str
    params: int
    flops: int
    kv_elements_per_token: int
    kv_bytes_per_token: int
    kv_elements_total: int
    kv_bytes_total: int
    relative: dict[str, float]  # to the MHA row: params, flops, kv_elements (the KV cache per token)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Comparison:
    preset: str
    shape: Shape
    rows: tuple[Row, ...]
    is_causal: bool = IS_CAUSAL
    given: tuple[str, ...] = ()  # the sizes set by hand (the rest: the preset's, or derived from them)

    def row(self, variant: str) -> Row:
        return next(r for r in self.rows if r.variant == variant)

    def to_dict(self) -> dict[str, Any]:
        return {"version": JSON_VERSION, "preset": self.preset, "given": list(self.given), "config": self.shape.to_dict(),
                "is_causal": self.is_causal, "rows": [r.to_dict() for r in self.rows]}


# --- measurement (torch from here on) -----------------------------------------------------------


_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def build(variant: Variant, shape: Shape, device: str = "meta"):
    """The reference module of ``variant`` for ``shape``, in eval mode, on ``device``.

    An MHA/MQA/GQA whose H·d_h is not d_model gets the model's own projections (module docstring);
    it can be measured, not run on data, so it is built on ``meta`` only."""
    import torch

    cls = getattr(importlib.import_module(f"attnprep.solutions.{variant.solution}"), variant.cls)
    args = variant.args(shape)
    widened = args.get("d_model") != shape.d_model
    if widened and device != "meta":
        raise ValueError(f"{variant.label} with head_dim {shape.head_dim} × {shape.num_heads} heads "
                         f"≠ d_model {shape.d_model} is built on the meta device only")
    with torch.device(device):
        module = cls(**args)
        if widened:
            _from_model_width(module, shape.d_model)
    return module.eval()


def _from_model_width(module, d_model: int) -> None:
    """Swap an attention module built at its inner width for one reading and writing ``d_model``:
    q/k/v take d_model features (a pre-hook hands them a (B, T, d_model) meta tensor in place of the
    inner-width ``x`` the reference's forward was called with) and o_proj returns d_model."""
    import torch.nn as nn

    def model_width_input(_linear, args):
        x = args[0]
        return (x.new_empty(*x.shape[:-1], d_model),)  # meta: a shape, no data and no FLOPs

    for name in _PROJECTIONS:
        old = getattr(module, name)
        if name == "o_proj":
            new = nn.Linear(old.in_features, d_model, bias=old.bias is not None)
        else:
            new = nn.Linear(d_model, old.out_features, bias=old.bias is not None)
            new.register_forward_pre_hook(model_width_input)
        setattr(module, name, new)


@dataclass(frozen=True)
class Measured:
    params: int
    flops: int
    kv_elements_per_token: int


def measure_variant(variant: Variant, shape: Shape) -> Measured:
    """Parameters, forward FLOPs (batch × seq tokens) and cache size of one variant, on meta."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    module = build(variant, shape)
    width = variant.args(shape).get("d_model", shape.d_model)  # the C the reference's forward reads
    x = torch.empty(shape.batch, shape.seq, width, device="meta")  # (B, T, C)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        module(x, is_causal=IS_CAUSAL)
    return Measured(params=sum(p.numel() for p in module.parameters()),
                    flops=int(counter.get_total_flops()),
                    kv_elements_per_token=int(variant.cache(module)))


def measure(preset: str = DEFAULT_PRESET, **overrides: int | str | None) -> Comparison:
    """Every variant of :data:`VARIANTS` for the preset's shape (with overrides), relative to MHA."""
    return compare_shape(resolve(preset, **overrides), preset=preset)


def compare_shape(shape: Shape, preset: str = "", given: tuple[str, ...] = ()) -> Comparison:
    """Every variant of :data:`VARIANTS` for a resolved shape, relative to MHA."""
    measured = [(v, measure_variant(v, shape)) for v in VARIANTS]
    base = measured[0][1]  # MHA: every count is positive for a shape that passed resolve()
    ratio = operator.truediv

    rows = tuple(
        Row(variant=v.key, label=v.label, cached=v.cached, kv_formula=v.formula(shape), params=m.params, flops=m.flops,
            kv_elements_per_token=m.kv_elements_per_token,
            kv_bytes_per_token=m.kv_elements_per_token * shape.dtype_bytes,
            kv_elements_total=m.kv_elements_per_token * shape.tokens,
            kv_bytes_total=m.kv_elements_per_token * shape.dtype_bytes * shape.tokens,
            relative={"params": ratio(m.params, base.params), "flops": ratio(m.flops, base.flops),
                      "kv_elements": ratio(m.kv_elements_per_token, base.kv_elements_per_token)})
        for v, m in measured
    )
    return Comparison(preset=preset.strip().lower(), shape=shape, rows=rows, given=tuple(given))
