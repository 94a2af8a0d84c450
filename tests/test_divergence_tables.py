"""Issue 24: a table of lambdas or a list of steps written as one statement over several lines is
no one operation. When the value that goes wrong is made inside one of its lambdas, the
divergence line is that lambda's (the entry being run), shown as that line reads, not the
statement's first line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from attnprep.grader import engine

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    from lines import bug_lines
finally:
    sys.path.remove(str(ROOT / "benchmarks"))

# (attempt, the line said): round 8's tables blamed at their first line before, and an attempt of
# our own whose number of a lambda (dim=-2) is said on that lambda's line
TABLES = [
    ("moe/lambda_table_router_top1_hardcoded.py", 15),
    ("rope/sympy_step_list_theta_fixed_sign_flipped.py", 22),
    ("mla_decode/sympy_step_list_chunk_mask_from_zero.py", 40),
    ("sdpa/namespace_of_lambdas_softmax_over_queries.py", 24),
]


@pytest.mark.parametrize("name, said", TABLES, ids=[n for n, _ in TABLES])
def test_a_wrong_value_made_in_a_lambda_of_a_table_is_said_at_that_lambda(name, said, graded):
    path = CORPUS / name
    d = graded(path).divergence
    assert d is not None
    assert d.line == said, (d.line, d.reason, d.code)
    assert min(abs(d.line - n) for n in bug_lines(path)) <= 1
    first, _ = engine._statements(path)[d.line]
    assert first < d.line  # inside the statement, not its first line
    assert d.code == path.read_text(encoding="utf-8").splitlines()[d.line - 1].strip().rstrip(",")


def test_lambda_spans_are_those_of_multi_line_statements_only():
    source = "f = lambda x: x\nT = {\n    'a': lambda x: x + 1,\n    'b': lambda x: (\n        x * 2),\n}\ny = [1,\n     2]\n"
    assert engine._lambda_spans(source) == {2: ((3, 3), (4, 5))}
