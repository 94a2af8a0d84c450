"""Round 8's lines that were off and the mechanisms that now say them (issue 24), each with a corpus
attempt of its class in another exercise: a flag argument of a helper's call set the wrong way
(grader/substitute.py, reason ``given_flag``), a flag defined elsewhere whose ``if`` leaves a step
out (grader/defined.py, ``flag_skips``), two right masks joined the wrong way (``masks_joined``) and
a bool mask cast to numbers on another line than the one that uses it (``mask_as_numbers``) and a
cache in the attempt's own layout given back so (``returned_layout``), grader/divergence.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnprep import texts
from attnprep.grader import defined
from attnprep.grader.result import Divergence

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("norms/dataclass_stats_layernorm_in_input_dtype.py", "given_flag"),  # round 8
    ("mha/helper_flag_unscaled_call.py", "given_flag"),
    ("moe/qwen2_moe_norm_topk_prob_default_false.py", "flag_skips"),  # round 8
    ("lora/class_switch_scaling_off.py", "flag_skips"),
    ("gqa/qwen2_sdpa_mask_or_combined.py", "masks_joined"),  # round 8
    ("mqa/visibility_grid_logical_or.py", "masks_joined"),
    ("sdpa/typeddict_spec_bool_mask_as_bias.py", "mask_as_numbers"),  # round 8
    ("mha/bias_builder_keep_as_float.py", "mask_as_numbers"),
    ("kv_cache/slots_state_tokens_before_heads.py", "returned_layout"),  # round 8 (no attempt of another
    # exercise: mla_decode's one written for it raised, the contract's cache fed back cannot be concatenated)
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_line_is_said_for_its_reason(name, reason, graded):
    path = CORPUS / name
    assert_pointed(path, graded(path), reason)


@pytest.mark.parametrize("reason", ["given_flag", "flag_skips", "masks_joined", "mask_as_numbers", "returned_layout"])
def test_the_new_reasons_read_in_both_languages(reason):
    d = Divergence(12, "x = f(y)", "self.flag", (3, 4), "(B, T)", reason, "f")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "{" not in words, (reason, lang)


FLAGGED = '''
class Block:
    RENORM = False

    def __init__(self, d, top_k, rescale=False):
        self.top_k = top_k
        self.rescale = rescale

    def forward(self, w):
        w = w.softmax(-1)
        if self.RENORM:
            w = w / w.sum(-1)
        if self.rescale:
            w = w * 2
        return w
'''


def _line(text: str, source: str = FLAGGED) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.strip() == text)


def test_a_flag_is_followed_to_its_literal():
    soft = _line("w = w.softmax(-1)")
    assert defined.flag_line(FLAGGED, soft, "values", {soft}) == (_line("RENORM = False"), "self.RENORM")
    ret = _line("return w")
    # the value used after a skipped branch: the nearest if before it (rescale, an __init__ default)
    assert defined.flag_line(FLAGGED, ret, "input", {soft, ret}) == (_line("def __init__(self, d, top_k, rescale=False):"),
                                                                     "self.rescale")


def test_a_flag_is_left_alone_when_its_branch_ran_or_the_grader_passes_it():
    soft, body, other = _line("w = w.softmax(-1)"), _line("w = w / w.sum(-1)"), _line("w = w * 2")
    assert defined.flag_line(FLAGGED, soft, "values", {soft, body, other}) is None  # both branches ran
    ret = _line("return w")
    assert defined.flag_line(FLAGGED, ret, "input", {soft, body, ret}, frozenset({"rescale"})) is None  # the grader's
    assert defined.flag_line(FLAGGED, soft, "layout", {soft}) is None  # not a reason about wrong values
    built = FLAGGED + "\n\nblock = Block(4, 2)\n"
    assert defined.flag_line(built, _line("return w", built), "input", {soft, body}) is None  # built in the file
