"""Rounds 7 to 10's lines that were off and the mechanisms that now say them (issue 24), each with a
corpus attempt of its class in another style: a tensor made from numbers the file computed in plain
Python or numpy, said where those numbers first go wrong (grader/pymade.py, reason ``made_python``);
a mask made from position grids, said at the comparison when its mask matches none of the reference's
(``compared``: grids that count alike, or a reference that compares grids into masks too); a mask made
by writing one value at positions into a mask that was right, said where the positions are made
(``indices``); a step left out by ``if mask is not None:`` because the caller's variable is None
unless a condition holds, said at that condition (``none_unless``), grader/divergence.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import texts
from attnprep.grader import pymade
from attnprep.grader.result import Divergence

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("alibi/mlx_alibi_slopes_descending_exponent.py", "made_python"),  # round 10
    ("alibi/cs336_asserts_slopes_from_zero_sign_flipped.py", "made_python"),  # round 9
    ("sliding_window/numpy_first_abs_band_pad_flipped.py", "made_python"),  # round 10
    ("alibi/numpy_geometric_slopes_from_zero.py", "made_python"),
    ("mha/cumsum_causal_one_step_ahead.py", "compared"),  # round 7
    ("gqa/one_based_positions_diagonal_masked.py", "compared"),
    ("flash/triton_program_ids_diag_blocked.py", "compared"),  # round 10
    ("flash/cuda_thread_ids_diagonal_blocked.py", "compared"),
    ("sliding_window/tril_indices_band_keep_window_plus_one_rows_pad.py", "indices"),  # round 7
    ("sliding_window/causal_then_carve_far_keys_short_window.py", "indices"),
    ("mla_decode/deepspeed_triangular_mask_first_call_only.py", "none_unless"),  # round 7
    ("kv_cache/gpt2_attn_helper_mask_prefill_only.py", "none_unless"),
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_line_is_said_for_its_reason(name, reason, graded):
    path = CORPUS / name
    assert_pointed(path, graded(path), reason)


@pytest.mark.parametrize("reason", ["made_python", "compared", "indices", "none_unless"])
def test_the_new_reasons_read_in_both_languages(reason):
    d = Divergence(12, "x = f(y)", "mask", (3, 4), "(T, T)", reason, "f")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "{" not in words, (reason, lang)


def test_plain_values_kept_are_floats_or_bools_never_index_lists():
    np = pytest.importorskip("numpy")
    assert pymade._plain([1, 2, 3]) is None  # sizes, indices
    assert pymade._plain([0.5, 0.25]) == [0.5, 0.25]
    assert pymade._plain((True, False)) == [1.0, 0.0]
    assert pymade._plain(np.arange(4)) is None
    assert pymade._plain(np.arange(4) < 2).tolist() == [1.0, 1.0, 0.0, 0.0]
    assert pymade._plain([0.5]) is None and pymade._plain("ab") is None


def test_a_right_value_is_a_run_of_the_reference_or_every_other_one_of_it():
    from attnprep.grader import divergence
    from attnprep.grader.trace import Step

    slopes = torch.tensor([0.5, 0.25, 0.125, 0.0625], dtype=torch.float64)
    ref = [Step(1, "s = slopes", "tensor", [4], "float32", values=slopes)]
    matcher = divergence.Matcher(ref)
    refs = [slopes]
    assert pymade._right(slopes[1:3], matcher, refs, [])  # a part of them, in order
    assert pymade._right(torch.tensor([0.5, 0.7, 0.25, 0.9, 0.125], dtype=torch.float64), matcher, refs, [])  # 2n, [0::2]
    assert not pymade._right(slopes.flip(0), matcher, refs, [])  # reversed
    assert not pymade._right(torch.tensor([1.0, 0.5, 0.25, 0.125], dtype=torch.float64), matcher, refs, [])  # from 0
