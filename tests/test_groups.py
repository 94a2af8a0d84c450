"""A mistake confined to a group of cases is said on the line only that group runs (grader/groups.py)."""

from pathlib import Path

import pytest

from attnprep.grader.found import Found
from attnprep.grader.groups import MAX_FAILING, MAX_PASSING, group_line, runs_to_cover

CORPUS = Path(__file__).parent / "corpus"


def _found(line: int, code: str = "s = s.masked_fill(~mask, float('-inf'))") -> Found:
    return Found(line, code, "s", (2, 4, 5, 5), "(B, H, T, T)", "skipped")


TEXT = {10: "if pad is None:", 11: "mask = tri", 12: "else:", 13: "mask = pad", 20: "s = q @ k.T",
        21: "s = s.masked_fill(~mask, float('-inf'))", 22: "return s.softmax(-1) @ v"}


def _group(found, lines, n_failing, statements=None):
    return group_line(found, lines, n_failing, statements or {}, lambda n: TEXT.get(n, ""))


def test_a_line_only_the_failing_cases_run_is_said_when_the_blamed_line_runs_in_every_case():
    failing = [[10, 12, 13, 20, 21, 22]] * 2
    passing = [[10, 11, 20, 21, 22]] * 3
    moved = _group(_found(21), failing + passing, 2)
    assert (moved.line, moved.reason, moved.code) == (13, "group", "mask = pad")
    assert moved.ref_code == _found(21).code  # where the wrong values were first seen, said alongside


def test_a_branch_a_few_passing_cases_also_run_still_parts_the_groups():
    failing = [[10, 12, 13, 20, 21, 22]] * 3
    passing = [[10, 12, 13, 20, 21, 22]] + [[10, 11, 20, 21, 22]] * 5  # padding that pads nothing passes
    assert _group(_found(21), failing + passing, 3).line == 13


@pytest.mark.parametrize("failing, passing, blamed", [
    ([[10, 12, 13, 20, 21, 22]] * 2, [[10, 12, 13, 20, 21, 22]] * 3, 21),  # every case runs the same lines
    ([[10, 12, 13, 20, 21, 22]] * 2, [], 21),  # nothing passes: nothing to tell apart
    ([[10, 12, 13, 20, 21, 22]] * 2, [[10, 11, 20, 22]] * 3, 21),  # the blamed line itself runs only when failing
    ([[20, 21, 10, 12, 13, 22]] * 2, [[20, 21, 10, 11, 22]] * 3, 21),  # the branch runs after the blamed line
    ([[10, 12, 13, 20, 21, 22]] * 2, [[10, 11, 20, 21, 22]] * 2 + [None], 21),  # a run that raised: no opinion
    ([[10, 12, 13, 20, 21, 22], [10, 11, 20, 21, 22]], [[10, 11, 20, 21, 22]] * 3, 21),  # half the failing cases
])
def test_the_blamed_line_stays_when_the_lines_do_not_part_the_groups(failing, passing, blamed):
    assert _group(_found(blamed), failing + passing, len(failing)).line == blamed


def test_a_lambda_of_a_table_written_over_several_lines_is_said_alone():
    statements = {n: (40, "MASKS = {...}") for n in range(40, 46)}
    text = {43: "(True, True): lambda s, pad, tri: s.masked_fill(~tri, NEG),"}
    failing = [[30, 43, 50]] * 2
    passing = [[30, 41, 50]] * 2 + [[30, 42, 50]] * 2
    moved = group_line(_found(40, "MASKS = {...}"), failing + passing, 2, statements, lambda n: text.get(n, ""))
    assert (moved.line, moved.code) == (43, "(True, True): lambda s, pad, tri: s.masked_fill(~tri, NEG)")


def test_the_cases_run_again_are_the_traced_one_first_then_failing_then_passing_of_its_config_first():
    failing = [(1, 2), (0, 1), (0, 3), (1, 0)]
    ran = [(c, i) for c in range(3) for i in range(6)]
    runs, n_failing = runs_to_cover(failing, ran, (1, 2))
    assert runs[0] == (1, 2) and n_failing == MAX_FAILING
    assert set(runs[1:n_failing]) <= set(failing)
    passing = runs[n_failing:]
    assert len(passing) == MAX_PASSING and not set(passing) & set(failing)
    assert all(c == 1 for c, _ in passing[:4])  # the traced config's passing cases come first
    assert runs_to_cover(failing, failing, (1, 2)) == ([], 0)  # every case fails: nothing run again


@pytest.mark.parametrize("exercise, name, lines", [
    ("alibi", "alibi_if_else_slopes_plain_for_odd_heads.py", {18, 19}),
    ("causal", "causal_keep_table_padded_drops_causal.py", {22, 23, 24}),
])
def test_a_mistake_of_a_group_of_cases_is_pointed_at_its_branch(graded, exercise, name, lines):
    result = graded(CORPUS / exercise / name)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line in lines, result.divergence


def test_a_line_the_finder_blames_as_the_wrong_operation_stays():
    failing = [[10, 12, 13, 20, 21, 22]] * 2
    passing = [[10, 11, 20, 21, 22]] * 3
    found = Found(21, TEXT[21], "s", (2, 4, 5, 5), "(B, H, T, T)", "values")  # right inputs, wrong result: this line
    assert _group(found, failing + passing, 2).line == 21


def test_the_line_that_calls_the_blamed_function_is_not_said_instead():
    failing = [[22, 10, 12, 13, 20, 21]] * 2  # line 22 calls a helper whose lines run after it starts
    passing = [[22, 10, 11, 20, 21]] * 3
    assert group_line(_found(21), failing + passing, 2, {}, lambda n: TEXT.get(n, ""), frozenset({22})).line == 13
    failing = [[22, 10, 20, 21]] * 2
    passing = [[10, 20, 21]] * 3
    assert group_line(_found(21), failing + passing, 2, {}, lambda n: TEXT.get(n, ""), frozenset({22})).line == 21


def test_a_condition_is_never_said_a_branch_prepared_right_keeps_the_finders_line():
    text = {23: "if attn_mask is not None:", 24: "if attn_mask.dtype == torch.bool:",
            25: "bias = bias.masked_fill(~attn_mask, float('-inf'))", 27: "bias = bias + attn_mask",
            30: "scores = torch.baddbmm(bias, q, k.transpose(1, 2), beta=0.0)"}
    failing = [[22, 23, 24, 25, 30], [22, 23, 24, 26, 27, 30], [22, 23, 24, 25, 30]]
    passing = [[22, 30]] * 6
    found = Found(30, text[30], "scores", (6, 5, 7), "(B*H, L, S)", "skipped")
    assert group_line(found, failing + passing, 3, {}, lambda n: text.get(n, "")).line == 30
