"""Which mistakes of the catalogue an exercise must list: the rules ``tests/test_registry.py`` holds
every exercise to and ``attnprep dev check`` says in words (one source for both).

An exercise's own mistakes (exercises/<id>/mistakes.toml: "mistakes that only one exercise can
make") belong to that exercise: it must list every one of them, and no other exercise may list one
unless a rule below says where else it can happen. The shared catalogue (exercises/mistakes.toml)
is judged by the rules below, written from what a contract offers (heads and projections, a padding
mask, a causal mask …) and from the traits its kind declares (grader/kinds/base.py TRAITS: what
the kind's exercises compute), not copied from the exercises' lists nor keyed on kind names.
Shared mistakes without a rule are not judged.
"""

from __future__ import annotations

import ast
import functools
import tomllib

from attnprep import exercises


def _arg_names(signature: str) -> list[str]:
    return [a.arg for a in ast.parse(f"def f({signature}): pass").body[0].args.args]


def _traits(ex) -> frozenset[str]:
    from attnprep.grader.kinds import kind_class
    from attnprep.grader.kinds.base import TRAITS

    traits = kind_class(ex).traits
    assert traits <= set(TRAITS), sorted(traits - set(TRAITS))
    return traits


def _one_module(ex) -> bool:
    """The attempt is one nn.Module built from the contract's constructor (a kind extending attention_module)."""
    from attnprep.grader.kinds import kind_class
    from attnprep.grader.kinds.attention_module import AttentionModule

    return issubclass(kind_class(ex), AttentionModule)


_trait = lambda name: lambda ex: name in _traits(ex)  # noqa: E731
_MODULE = lambda ex: "num_heads" in _arg_names(ex.contract.constructor)  # noqa: E731
_CAUSAL_FUNCTIONS = _trait("mask_function")  # a causal mask function graded on its own
_WINDOWED = lambda ex: "window" in ex.grading.get("args", [])  # noqa: E731  (its own inverted-mask mistake)
_PADDING = lambda ex: "attention_mask" in ex.contract.forward or "context_mask" in ex.contract.forward  # noqa: E731  (a (B, T) key padding mask)
_SDPA = _trait("torch_sdpa")  # torch's SDPA: attn_mask, scale, L != S
_CACHED = _trait("cached")
_PROJECTED = lambda ex: _MODULE(ex) or _CACHED(ex)  # noqa: E731  (d_model, heads merged, an output projection)
_GROUPED = lambda ex: "num_kv_heads" in _arg_names(ex.contract.constructor)  # noqa: E731  (shared K/V heads, some grouped)
_FUSED = lambda ex: any(p.name == "qkv_proj" for p in ex.contract.params)  # noqa: E731  (one projection for q, k and v)
_LATENT = lambda ex: "kv_lora_rank" in _arg_names(ex.contract.constructor)  # noqa: E731  (MLA: a compressed latent)
_MLA_DECODE = lambda ex: _LATENT(ex) and _CACHED(ex)  # noqa: E731  (the absorbed form over a cache of latents)
_ATTENTION = _trait("attention")  # scores, softmax, masks
_LOW_PRECISION = _trait("low_precision")  # graded in bfloat16 / float16
_BIASED = _trait("position_bias")  # causal, a position bias: "no causal mask" is its own mistake
_MAKES_TENSORS = _trait("makes_tensors")  # positions, indices: made on the device or not
_NORM = _trait("norm")  # normalisation layers with an eps
_CAUSAL = lambda ex: "is_causal" in ex.contract.forward or _CAUSAL_FUNCTIONS(ex) or _CACHED(ex) or _BIASED(ex)  # noqa: E731
# a blocked kernel has no softmax over whole rows: a softmax dim, a mask after the exp (p is
# still normalised by the same sum: right) or k @ q^T on tiles do not apply; its causal off-by-ones
# have their own name (flash_causal_off_by_one), since they interact with the skipped key blocks.
_ROWS = _trait("rows")


def _k_as_wide_as_v(ex) -> bool:
    """attn @ k computes a wrong output, rather than crashing, only if a key is as wide as a value in
    every graded config; in latent attention a key has qk_nope_head_dim + qk_rope_head_dim features
    and a value v_head_dim."""
    if not _ATTENTION(ex):
        return False
    if _SDPA(ex):
        return all(c["E"] == c["Ev"] for c in ex.grading["configs"])
    if _MLA_DECODE(ex):  # the absorbed form attends over latents: keys are [c; k_pe], values c
        return False
    if not _LATENT(ex):
        return True
    return all(c["qk_nope_head_dim"] + c["qk_rope_head_dim"] == c["v_head_dim"] for c in ex.grading["configs"])


MISTAKE_APPLIES = {
    "missing_scale": _ATTENTION,
    "scale_d_model": _PROJECTED,
    "scale_inverted": _ATTENTION,
    "scale_by_dim": _ATTENTION,
    "softmax_wrong_dim": lambda ex: _ATTENTION(ex) and _ROWS(ex),
    "scores_k_q_swapped": lambda ex: _ATTENTION(ex) and _ROWS(ex) and not _SDPA(ex) and not _CACHED(ex),  # L != S / (T_new, S): k @ q^T raises
    "attn_times_k": _k_as_wide_as_v,
    "split_heads_no_transpose": lambda ex: _MODULE(ex) and not _MLA_DECODE(ex),  # the absorbed form splits no heads
    "merge_heads_no_transpose": _PROJECTED,
    "mask_after_softmax": lambda ex: _ATTENTION(ex) and _ROWS(ex),
    "mask_fill_zero": _ATTENTION,
    "padding_mask_inverted": _PADDING,
    "padding_mask_ignored": _PADDING,
    "padding_mask_on_queries": _PADDING,
    "masks_combined_or": lambda ex: _PADDING(ex) and _CAUSAL(ex),  # any attempt that combines causal and padding masks in one
    "causal_masks_diagonal": lambda ex: _ATTENTION(ex) and _CAUSAL(ex) and _ROWS(ex),
    "causal_leaks_next": lambda ex: _ATTENTION(ex) and _CAUSAL(ex) and _ROWS(ex),
    "causal_inverted": lambda ex: _ATTENTION(ex) and _CAUSAL(ex) and not _WINDOWED(ex),
    "causal_ignored": lambda ex: _ATTENTION(ex) and _CAUSAL(ex) and not _BIASED(ex),
    "causal_flag_inverted": lambda ex: "is_causal" in ex.contract.forward,
    "causal_mask_inverted": lambda ex: _CAUSAL_FUNCTIONS(ex) and not _WINDOWED(ex),
    "output_proj_skipped": _PROJECTED,
    "dropout_in_eval": lambda ex: "dropout" in _arg_names(ex.contract.constructor),
    "fused_qkv_layout": _FUSED,
    "gqa_heads_tiled": _GROUPED,
    "mla_scale_sum_sqrt": _LATENT,
    "mla_scale_partial": _LATENT,
    "mla_norm_skipped": _LATENT,
    "mla_split_order": _LATENT,
    "rope_skipped": _LATENT,
    "rope_cos_sin_swapped": _LATENT,
    "rope_rotate_half": _LATENT,
    "tensor_without_device": lambda ex: _ATTENTION(ex) or _MAKES_TENSORS(ex),  # positions: arange(T) without device
    "used_builtin": lambda ex: True,
    # an exercise's own mistakes that can happen elsewhere too
    "cache_mask_not_offset": _CACHED,
    "cache_chunk_unmasked": _CACHED,
    "cache_prepended": _CACHED,
    "cache_wrong_axis": _CACHED,
    "cache_not_returned": _CACHED,
    "cache_in_module_state": _CACHED,
    "output_dtype_not_kept": _LOW_PRECISION,
    # the norm layers' eps convention, in MLA's RMSNorms too
    "norm_eps_convention": lambda ex: _NORM(ex) or _LATENT(ex),  # the cached latent form too: its small-inputs script shows it
}


def _own_mistakes() -> dict[str, str]:
    """mistake id -> the exercise whose own mistakes.toml defines it."""
    return {m["id"]: path.parent.name for path in sorted(exercises.HERE.glob("*/mistakes.toml"))
            for m in tomllib.loads(path.read_text(encoding="utf-8")).get("mistake", [])}


OWN_MISTAKES = _own_mistakes()  # the bank's at import (tests/test_registry.py's parametrised rules)


@functools.lru_cache(maxsize=8)
def _owners(here: str) -> dict[str, str]:
    return _own_mistakes()


def mistake_applies(mistake_id: str, ex) -> bool | None:
    """Whether the mistake can happen in the exercise; None when it is not judged."""
    if mistake_id in MISTAKE_APPLIES:
        return MISTAKE_APPLIES[mistake_id](ex)
    owners = _owners(str(exercises.HERE))  # read where the bank is now (a test's copy of it too)
    if mistake_id in owners:
        return ex.id == owners[mistake_id]
    return None


def listing_problems(ex) -> tuple[list[str], list[str]]:
    """(shared or own mistakes the exercise must list and does not, listed ones that cannot happen
    in it), by the rules above; mistakes no rule judges are neither."""
    listed = {m.id for m in ex.mistakes}
    judged = {m for m in exercises.mistake_catalogue() if mistake_applies(m, ex) is not None}
    expected = {m for m in judged if mistake_applies(m, ex)}
    return sorted(expected - listed), sorted((listed & judged) - expected)
