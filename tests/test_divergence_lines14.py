"""Issue 24's off lines of the held-out rounds (lines14): the mechanisms for their classes, each shown
by a round's attempt and by a corpus attempt of its class written in another style (grader/divergence.py):

- a number worked out on its line from a variable set on another line, by the arithmetic the
  reference uses on its own variable (``(1.0 - smoothing)`` for ``(1 - label_smoothing)``,
  ``-(span - 1)`` for ``-(window - 1)``): said where the variable got its value ("scalar");
- a function the reference never applies, given a value the reference has half-way through a line
  (``searchsorted`` on the cumulative sum, ``torch.var`` on the centred values): the input stops
  short of nothing, the step is the story; a float tensor of one number the reference takes as a plain
  number (``torch.full((B, 1), top_p)``) is no wrong "made";
- a table made without the inputs that is the reference's wherever the reference's later mask keeps
  it (``|i - j|`` for ``i - j`` under the causal mask) is no wrong "made";
- a mask fill that blocks where the reference keeps, reading a parameter renamed as it came
  (``key_padding_mask = attention_mask``): the rename ("renamed");
- a helper of the file given one of two alike values where the reference's same step takes the
  other (``v = rope(v)``): the call ("handed")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnprep import texts
from attnprep.grader import divergence
from attnprep.grader.result import Divergence

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("cross_entropy/megatron_vocab_parallel_smoothing_rescaled.py", "scalar"),  # round 12
    ("sliding_window/longformer_one_sided_span_plus_one_triu.py", "scalar"),
    ("sampling/searchsorted_cutoff_left_side.py", "values"),  # round 12
    ("norms/gluon_hybrid_forward_centred_torch_var.py", "values"),
    ("alibi/cdist_distance_slopes_from_zero_sign_flipped.py", "made"),  # round 12
    ("alibi/t5_style_relative_buckets_abs_distance_reversed_slopes.py", "made"),
    ("mha/fairseq_tbc_key_padding_mask_not_negated.py", "renamed"),  # round 10
    ("mha/fairseq_key_padding_mask_passed_as_is.py", "renamed"),  # round 5 (within one before, now its line)
    ("cross_attention/pytorch_transformer_memory_key_padding_mask_as_is.py", "renamed"),
    ("decoder_layer/haiku_get_parameter_rope_on_values.py", "handed"),  # round 12
    ("decoder_layer/meta_apply_rotary_emb_given_xv.py", "handed"),
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_line_is_said_for_its_reason(name, reason, graded):
    path = CORPUS / name
    assert_pointed(path, graded(path), reason)


@pytest.mark.parametrize("reason", ["renamed", "handed"])
def test_the_new_reasons_read_in_both_languages(reason):
    d = Divergence(12, "x = f(y)", "key_padding_mask", (3, 4), "(B, T)", reason, "attention_mask", "(B, T)", "f(y)")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "{" not in words and "attention_mask" in words, (reason, lang)


def _piece(code: str):
    (piece, name), = divergence._arithmetic_pieces(code)
    return piece, name


def test_a_piece_of_arithmetic_reads_one_variable():
    piece, name = _piece("loss = (1.0 - smoothing) * loss - 2")
    assert name == "smoothing" and ast.unparse(piece) == "1.0 - smoothing"
    # two variables in one piece: not a number worked out from one
    assert divergence._arithmetic_pieces("x = t * (a - b)") == []
    # math calls count as arithmetic; a tensor method does not
    piece, name = _piece("s = q @ k * (1.0 / math.sqrt(d))")
    assert name == "d" and divergence._evaluated(piece, name, 4.0) == 0.5
    assert divergence._arithmetic_pieces("s = x.sum(-1) + 1") == []


def test_the_same_arithmetic_of_another_variable_has_the_same_shape():
    mine, theirs = _piece("m = ones.triu(diagonal=-(span - 1))"), _piece("r = torch.triu(ones, diagonal=-(window - 1))")
    assert divergence._shape_of(*mine) == divergence._shape_of(*theirs)
    assert divergence._shape_of(*_piece("y = (1.0 - eps) * x")) == divergence._shape_of(*_piece("y = (1 - e) * x"))
    # another arithmetic (+ for -) is the line's own mistake, not the variable's
    assert divergence._shape_of(*_piece("y = (1.0 + eps) * x")) != divergence._shape_of(*_piece("y = (1 - e) * x"))


def test_a_straight_line_is_solved_for_its_variable():
    piece, name = _piece("r = torch.triu(ones, diagonal=-(window - 1))")
    assert divergence._solved(piece, name, -2.0) == 3.0
    piece, name = _piece("y = x / math.sqrt(d)")  # not a straight line in d: no answer
    assert divergence._solved(piece, name, 2.0) is None


def test_the_variable_is_found_where_it_was_assigned_unless_it_is_a_parameter_or_a_size():
    source = "def f(window, x):\n    span = window + 1\n    n = x.shape[0]\n    return span, n, window\n"
    assert divergence._assigned_before(source, "span", 4) == 2
    assert divergence._assigned_before(source, "window", 4) is None
    assert divergence._assigned_before(source, "n", 4) is None
