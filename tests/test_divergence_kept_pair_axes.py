"""Three lines of issue 24 that were off, and what now says them, each with a corpus attempt of its
class written in another style: an output stored a step short while the attempt computes its right
value afterwards (the latent cached before its norm, the norm applied to the whole cache later:
``kept_elsewhere``, grader/divergence.py); a helper that is right with the two tensors of a pair
argument the other way round (``(cos, sin)`` unpacked as ``sin, cos``: ``given_pair``,
grader/substitute.py); and a step that works on the last axis only of a value whose leading axes are
heads before tokens, a layout a correct attempt may use, no longer blamed on that layout; and a
table made without the inputs (ALiBi slopes from 0) whose few numbers all occur in a much larger
table of the reference's (the bias) is no longer taken for that table relaid: it is wrong where it
is made (grader/divergence.py, ``relaid``); a helper that only applies, in order, the layers it is
given (``for layer in layers: x = layer(x)``) is its caller's list when a step is missing between two
of them (``helper_applies``, grader/engine.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprep import texts
from attnprep.grader.result import Divergence

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("mla_decode/gpt_fast_input_pos_cache_raw_latent.py", "kept_elsewhere"),  # round 9
    ("mla_decode/ggml_graph_names_cache_raw_latent.py", "kept_elsewhere"),
    ("mla_decode/qwen3_cache_position_new_first_sin_cos.py", "given_pair"),  # round 8
    ("decoder_layer/olmo_rotary_pos_sin_cos_unpacked_swapped.py", "given_pair"),
    ("mla/mlx_fast_rope_cos_sin_swapped.py", None),  # round 7
    ("mla/tiny_helpers_rope_never_called_pad_rows.py", None),
    ("mla/fairseq_shape_helper_rope_halves.py", None),
    ("alibi/paper_recursive_torch_pow_from_zero.py", "made"),
    ("alibi/exp2_einsum_slopes_from_zero.py", "made"),
    ("mla/tinygrad_q_norm_skipped_next_visible.py", "helper_applies"),  # round 7
    ("cross_attention/stage_list_runner_padding_stage_left_out.py", "helper_applies"),
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_line_is_said_for_its_reason(name, reason, graded):
    path = CORPUS / name
    d = assert_pointed(path, graded(path))
    assert d.reason == reason if reason else d.reason != "layout", d


@pytest.mark.parametrize("reason", ["kept_elsewhere", "given_pair", "helper_applies"])
def test_the_new_reasons_read_in_both_languages(reason):
    d = Divergence(12, "x = f(y)", "pe", (3, 4), "(B, T)", reason, "f")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "{" not in words, (reason, lang)


def test_a_helper_that_only_applies_the_layers_it_is_given_is_its_callers():
    """``for layer in layers: x = layer(x)`` is the caller's list of layers; a loop with a number of
    its own, a call of something it was not given (``reversed``, ``torch``), or more than loops,
    assignments and a return, is the learner's own code."""
    from attnprep.grader.engine import _argument_helpers

    source = '''
def run(stages, t):
    for stage in stages:
        t = stage(t)
    return t
def sequential(x, layers):
    """tinygrad's x.sequential."""
    for layer in layers:
        x = layer(x)
    return x
def backwards(x, layers):
    for layer in reversed(layers):
        x = layer(x)
    return x
def twice(x, layers):
    for layer in layers:
        x = layer(x) * 2
    return x
def logged(x, layers):
    for layer in layers:
        x = layer(x)
        print(x)
    return x
'''
    appliers: set[str] = set()
    assert set(_argument_helpers(source, appliers)) == appliers == {"run", "sequential"}
