"""Issue 24's lines of rounds 5-11 that the thirteenth session's mechanisms say (grader/divergence.py),
each with a corpus attempt of its class in a style no earlier file used:

- ``near``: an output that the trail lines up with the reference's (its tolerance is ten times the
  grader's) but that the grade fails at its own tolerance is wrong, and so are the steps on its way
  that are only near their match: label smoothing spread over V - 1 classes had no line at all (every
  step "got back on track" at the loss);
- ``rescaled``: a first wrong step that is a reference value times one number (a sum where the
  reference takes the mean) is a building block in another scale, not a step left out: the number that
  scales it later is said, where it is set (fairseq's eps_i), in a near run or where the finder said
  "input";
- the same for an output wrong at both tolerances: a LayerNorm whose ``var + 1e-3`` is only near the
  reference's ``var + 1e-5`` is not right because it is near (said at the default, ``scalar``);
- ``table_key``: values that first go wrong inside an entry of a table of the file's own functions
  (``ACT2FN[config.hidden_act]``) picked by a string set in one place, when the reference names
  another key of the table and not this one: said where the string is set (a wrong formula in the
  entry the reference names stays inside it);
- ``zero_positions``: a wrong step fed by a rotation that changed nothing (cos 1, sin 0 because the
  positions are all 0 in a decode step), said where the positions are made or at the call that leaves
  a helper's start at its default."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import texts
from attnprep.grader import divergence
from attnprep.grader.result import Divergence
from attnprep.grader.trace import Step

from pointed import assert_pointed

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"

SAID = [
    ("cross_entropy/minbpe_terse_smooth_over_v_minus_one.py", "rescaled"),  # round 10 (no line before)
    ("cross_entropy/staticmethods_smoothing_over_other_classes.py", "rescaled"),  # round 7 (no line before)
    ("cross_entropy/fairseq_label_smoothed_nll.py", "rescaled"),  # round 5 (no line before): the eps_i line
    ("norms/keras_moments_layernorm_epsilon_1e3.py", "scalar"),  # new: the output wrong at both tolerances
    ("mla_decode/namedtuple_step_key_rope_from_zero.py", "zero_positions"),  # round 8: the call without start
    ("mla_decode/weight_dict_absorb_rope_from_zero.py", "zero_positions"),  # round 11: arange(T)
    ("mla_decode/vllm_cos_sin_cache_positions_from_zero.py", "zero_positions"),  # new: a cos_sin_cache lookup
    ("swiglu/phi2_new_gelu_activation_as_act_fn.py", "table_key"),  # round 11: a class attribute picks the entry
    ("swiglu/torchtune_builder_config_activation_relu.py", "table_key"),  # new: a dataclass field, a function table
]


@pytest.mark.parametrize("name, reason", SAID, ids=[n for n, _ in SAID])
def test_the_line_is_said_for_its_reason(name, reason, graded):
    path = CORPUS / name
    assert_pointed(path, graded(path), reason)


@pytest.mark.parametrize("reason", ["near", "rescaled", "zero_positions", "table_key"])
def test_the_new_reasons_read_in_both_languages(reason):
    d = Divergence(12, "x = f(y)", "rest", (3, 4), "(B, T)", reason, "f")
    for lang in texts.LANGUAGES:
        words = texts.t(f"divergence.{reason}", lang, line=d.line, name=d.name, shape=d.shape, named=d.named,
                        ref_name=d.ref_name, ref_named=d.ref_named, ref_code=d.ref_code)
        assert "12" in words and "{" not in words, (reason, lang)


def _step(line: int, func: str, values, parents=(), free=False) -> Step:
    t = torch.tensor(values, dtype=torch.float64)
    return Step(line, f"line {line}", func, list(t.shape), "float32", list(parents), t.flatten(), free)


def _trails(out: float):
    """x -> x.sum(-1) / 4 (the reference's mean) -> * 0.5; the attempt's last step gives ``out``."""
    x = [[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]
    ref = [_step(1, "reshape", x), _step(2, "mean", [2.5, 2.0], [0]), _step(3, "mul", [1.25, 1.0], [1])]
    att = [_step(5, "reshape", x), _step(6, "mean", [2.5, 2.0], [0]), _step(7, "mul", [out, 1.0], [1])]
    return att, ref


def test_an_output_only_near_the_reference_is_wrong_and_gets_a_line():
    """1.2505 is within the trail's tolerance of 1.25 (ten times the grader's) but not the grader's:
    the output is the line; 1.25001 is within both and no line is said."""
    att, ref = _trails(1.2505)
    found = divergence.find(att, ref, {}, None, ({"out": 2}, {"out": 2}))
    assert found is not None and found.line == 7, found
    att, ref = _trails(1.25001)
    assert divergence.find(att, ref, {}, None, ({"out": 2}, {"out": 2})) is None


def test_a_case_with_a_wider_tolerance_is_near_only_outside_it():
    """A case graded at a wider tolerance (a low precision, gradients) calls near only what it fails."""
    att, ref = _trails(1.2505)
    assert divergence.find(att, ref, {}, None, ({"out": 2}, {"out": 2}), tolerance=(1e-3, 1e-4)) is None


WRONG_ENTRY = """
import torch
from torch import nn


def silu(x):
    return x * torch.sigmoid(-x)


def relu(x):
    return torch.clamp(x, min=0.0)


ACT = {"silu": silu, "relu": relu}


class SwiGLU(nn.Module):
    act = "silu"

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(ACT[self.act](self.w1(x)) * self.w3(x))
"""


def test_a_wrong_formula_in_the_entry_the_reference_names_stays_inside_it(tmp_path):
    """The same table picked right ("silu"), its silu written wrong: the line is silu's own."""
    from attnprep.grader import grade

    path = tmp_path / "swiglu.py"
    path.write_text(WRONG_ENTRY, encoding="utf-8")
    result = grade(path, "swiglu")
    assert not result.passed
    d = result.divergence
    assert d is not None and d.reason != "table_key", d
    assert d.line == WRONG_ENTRY.splitlines().index("    return x * torch.sigmoid(-x)") + 1, d
