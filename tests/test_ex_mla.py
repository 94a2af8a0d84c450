"""mla: where the divergence finder points in DeepSeek's own form (complex rotations, a refused layer),
and what the shared tests read about this exercise (its corpus is graded by tests/test_grader.py)."""

from __future__ import annotations

from pathlib import Path

from attnprep.grader import grade
from test_divergence import _with

CORPUS = Path(__file__).parent / "corpus"


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"focus": ("layer_drop", "split_order"), "extra": {"layer_drop"}}


def test_a_wrong_rope_angle_in_mla_is_pointed_at_where_the_angles_are_made(tmp_path):
    """DeepSeek's rotations are complex tensors: their values are compared like any other, so a
    wrong frequency shows at the line that makes it, not two helper calls later."""
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = 1.0 / (theta **", "freqs = 2.0 / (theta **")
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line == line and "freqs = 2.0" in result.divergence.code, result.divergence


def test_a_wrong_angle_table_in_mla_is_pointed_at_even_without_a_wrong_number(tmp_path):
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", "freqs = torch.outer(t, freqs)",
                       "freqs = torch.outer(t * 2, freqs)")  # (t + 1: RoPE is relative, passes)
    result = grade(path)
    assert result.divergence is not None and result.divergence.line == line, result.divergence


def test_a_layer_the_contract_refuses_is_pointed_at_where_it_is_made(tmp_path):
    text = (CORPUS / "mla/ok_deepseek_verbatim_rope.py").read_text(encoding="utf-8")
    old = next(line for line in text.splitlines() if "self.wo = " in line)
    path, line = _with(tmp_path, "mla/ok_deepseek_verbatim_rope.py", old, old.replace("bias=False", "bias=True"))
    result = grade(path)
    assert result.verdict.value == "contract"
    d = result.divergence
    assert d is not None and (d.line, d.reason, d.name) == (line, "contract", "self.wo"), d


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("qk_nope_head_dim", "nope + rope", "self.wo")
FIX_SAYS = {"missing_scale": "nope + rope"}
