"""flash: the reference against torch's scaled_dot_product_attention (values and gradients), the
allocation measure behind the structure check, the cases the blocked_attention kind grades,
what the report says about a materialised score matrix, where it first goes wrong in buggy blocked
attempts (the line of the slip, not of the output it spoils), and the mistakes as edits of the
reference, held to the code that computed them before (tests/functional_variants.py's blocked)."""

from __future__ import annotations

import inspect
from pathlib import Path

import functional_variants
import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises, texts, wording
from attnprep.grader import grade, variants
from attnprep.grader.edits import EditError, edited_source
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.blocked_attention import Allocations
from attnprep.grader.result import Verdict
from attnprep.grader.tensors import ATOL, RTOL
from attnprep.solutions.flash import flash_attention

EX = exercises.get("flash")
CORPUS = Path(__file__).parent / "corpus" / "flash"
F64 = torch.float64

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "blocked_attention",
    "objects": ("flash_attention",),
    "signatures": {"flash_attention": "q, k, v, is_causal=False, block_size=64"},
    "returns": "(B, H, L, D)",
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors; and the grader forks: torch stays single-threaded (as warm_up leaves it)."""
    torch.set_num_threads(1)


def _qkv(B, H, L, S, D, seed=0, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, H, L, D, generator=g, dtype=dtype), torch.randn(B, H, S, D, generator=g, dtype=dtype),
            torch.randn(B, H, S, D, generator=g, dtype=dtype))


@pytest.mark.parametrize(("L", "S"), [(1, 1), (1, 9), (7, 7), (5, 11), (9, 4), (16, 16), (13, 30)])
@pytest.mark.parametrize("block", [1, 3, 4, 8, 64])
@pytest.mark.parametrize("is_causal", [False, True])
def test_reference_equals_torch_sdpa(L, S, block, is_causal):
    q, k, v = _qkv(2, 3, L, S, 5, seed=L * 100 + S)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)  # causal: top-left aligned
    torch.testing.assert_close(flash_attention(q, k, v, is_causal, block), want, rtol=1e-10, atol=1e-10)
    assert inspect.signature(flash_attention).parameters["block_size"].default == 64


@pytest.mark.parametrize("is_causal", [False, True])
def test_reference_gradients_equal_torch_sdpa(is_causal):
    leaves = [t.requires_grad_(True) for t in _qkv(2, 2, 9, 13, 4, seed=3)]
    weights = torch.randn(2, 2, 9, 4, dtype=F64, generator=torch.Generator().manual_seed(1))
    (flash_attention(*leaves, is_causal, 4) * weights).sum().backward()
    mine = [t.grad.clone() for t in leaves]
    for t in leaves:
        t.grad = None
    (F.scaled_dot_product_attention(*leaves, is_causal=is_causal) * weights).sum().backward()
    for got, t in zip(mine, leaves):
        torch.testing.assert_close(got, t.grad, rtol=1e-9, atol=1e-9)


def test_reference_stays_finite_where_a_naive_exp_overflows():
    q = torch.full((1, 1, 3, 4), 30.0)
    k = torch.cat([torch.full((1, 1, 2, 4), 30.0), torch.full((1, 1, 5, 4), -30.0)], dim=2)
    v = torch.randn(1, 1, 7, 4, generator=torch.Generator().manual_seed(0))
    out = flash_attention(q, k, v, False, 2)  # scores 1800 then -1800
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))


# --- the allocation measure -------------------------------------------------------------------------


def _measure(fn, *args):
    watch = Allocations(args[:3], __file__)
    with torch.no_grad(), watch:
        fn(*args)
    return watch


def test_allocations_count_new_storages_not_views_nor_in_place():
    q, k, v = _qkv(1, 1, 32, 64, 8, dtype=torch.float32)

    def views_only(q, k, v):
        a = k.transpose(-2, -1)[..., :3]
        b = v.expand(2, -1, -1, -1)
        q.mul_(1.0)
        return a, b

    assert _measure(views_only, q, k, v).elements == 0

    def one_mask(q, k, v):
        return torch.arange(64)[None, :] > torch.arange(32)[:, None]  # bool (32, 64)

    watch = _measure(one_mask, q, k, v)
    assert (watch.elements, watch.shape, watch.dtype) == (32 * 64, (32, 64), "bool")
    assert watch.line > 0 and "torch.arange(64)" in watch.code

    def scores(q, k, v):
        return q @ k.transpose(-2, -1)

    assert _measure(scores, q, k, v).elements == 32 * 64


def test_reference_fits_the_bound_and_a_full_softmax_does_not():
    kind = kind_for(EX, 0)
    for name, spec in kind.long_cases().items():
        q, k, v = _qkv(spec["batch"], spec["heads"], spec["L"], spec["S"], spec["dim"], dtype=torch.float32)
        ref = _measure(flash_attention, q, k, v, spec["is_causal"], spec["block"])
        assert 0 < ref.elements <= spec["bound"], (name, ref.elements, ref.shape)

        def full(q, k, v, is_causal, block_size):
            s = (q @ k.transpose(-2, -1)) / 4.0
            if is_causal:
                s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
            return s.softmax(-1) @ v

        assert _measure(full, q, k, v, spec["is_causal"], spec["block"]).elements == spec["L"] * spec["S"]


def test_structure_bounds_are_spec_7s():
    kind = kind_for(EX, 0)
    cases = {(c["L"], c["S"], c["is_causal"]): c for c in kind.long_cases().values()}
    assert set(cases) == {(256, 1024, False), (512, 512, True)}
    for (L, S, _), c in cases.items():
        assert (c["dim"], c["block"]) == (16, 64)
        assert c["bound"] == c["batch"] * c["heads"] * L * max(16, 64)
        # (L, block) tiles fit, an (L, S) matrix does not; (block, S) rows do not fit the non-causal case
        assert L * c["block"] <= c["bound"] // (c["batch"] * c["heads"]) < L * S
    assert 64 * 1024 > cases[(256, 1024, False)]["bound"]


# --- the graded cases ----------------------------------------------------------------------------------


@pytest.mark.parametrize("ci", range(len(EX.grading["configs"])))
def test_cases_cover_the_sizes_and_flags_that_matter(ci):
    kind = kind_for(EX, 0)
    cases = kind.cases(ci)
    shapes = {(c.seq, c.inputs["block_size"], c.inputs["is_causal"]) for c in cases}
    assert any(L > S for (L, S), _, _ in shapes) and any(L < S for (L, S), _, _ in shapes)
    assert any(L == 1 for (L, S), _, _ in shapes)
    assert any(b == 1 for _, b, _ in shapes) and any(b is None for _, b, _ in shapes)
    assert any(b and (L % b or S % b) for (L, S), b, _ in shapes)  # ragged last blocks
    assert {c for _, _, c in shapes} == {False, True}
    assert sum(c.observe for c in cases) == 1
    assert {c.check for c in cases if c.base} <= {"causality", "batch"} and any(c.check == "causality" for c in cases)
    long = [c for c in cases if c.name in kind.long_cases()]
    assert len(long) == (2 if ci == 0 else 0)
    for case in cases:
        B, H, L, D = case.inputs["q"].shape
        assert case.inputs["k"].shape[:2] == (B, H) and case.inputs["k"].shape == case.inputs["v"].shape
        assert case.queries.all() and case.queries.shape[0] == B
        # every query row graded, the long cases' too
        assert case.queries.shape == (B, L) and kind.expected_shapes(ci, case)["out"] == (B, H, L, D)


def test_large_score_case_is_exact_and_breaks_a_max_that_is_not_carried():
    kind = kind_for(EX, 0)
    for ci in range(len(kind.configs)):
        big = [c for c in kind.cases(ci) if c.name.startswith("large scores")]
        assert len(big) == 2
        for case in big:
            i = case.inputs
            q, k, v = i["q"].double(), i["k"].double(), i["v"].double()
            scores = q @ k.transpose(-2, -1) / 2
            assert scores.abs().max() > 100 and torch.equal(2 * scores, (2 * scores).round())  # exact halves
            want = F.scaled_dot_product_attention(q, k, v, is_causal=i["is_causal"])
            torch.testing.assert_close(kind.reference(ci)(case)["out"].double(), want, rtol=1e-5, atol=1e-6)
        for case in big:  # each of these overflows or underflows here, and only here
            for knob in ("flash_max_not_carried:skip", "flash_max_init_zero"):
                wrong = kind.variant(ci, frozenset(), knob, float("-inf"))(case)["out"]
                assert not torch.isfinite(wrong).all(), (ci, case.name, knob)
    # and on ordinary scores the same mistakes are exact: only the large case can name them
    for small in kind.cases(0)[:6]:
        for knob in ("flash_max_not_carried:skip", "flash_max_init_zero"):
            torch.testing.assert_close(kind.variant(0, frozenset(), knob, float("-inf"))(small)["out"],
                                       kind.reference(0)(small)["out"], rtol=1e-5, atol=1e-6)


# --- what the grader says ------------------------------------------------------------------------------


def test_full_softmax_is_right_but_fails_structure_with_the_measured_figure(graded):
    result = graded(CORPUS / "flash_full_scores.py")
    assert result.verdict is Verdict.STRUCTURE
    assert [d.id for d in result.diagnoses] == ["flash_full_scores"]
    assert all(c.passed is not False for c in result.checks if c.id != "structure_memory")
    (check,) = [c for c in result.checks if c.id == "structure_memory"]
    words = texts.render(check.message)
    assert "262,144 elements" in words and "an L×S score matrix" in words and "allowed 16,384" in words
    assert "line 14" in words and "q @ k.transpose" in words


def test_block_rows_are_named_as_rows(graded):
    result = graded(CORPUS / "flash_row_blocks.py")
    assert result.verdict is Verdict.STRUCTURE and [d.id for d in result.diagnoses] == ["flash_row_blocks"]
    (check,) = [c for c in result.checks if c.id == "structure_memory"]
    assert "(64, S) rows" in texts.render(check.message)


def test_reference_and_blank_stub(tmp_path):
    attempt = tmp_path / "flash.py"
    attempt.write_text(EX.solution_path.read_text(encoding="utf-8"), encoding="utf-8")
    result = grade(attempt)
    assert result.passed
    (check,) = [c for c in result.checks if c.id == "structure_memory"]
    assert check.passed and check.message.params["elements"] <= check.message.params["allowed"]
    attempt.write_text(exercises.render_stub(EX), encoding="utf-8")
    assert grade(attempt).blank


def test_wrong_and_too_big_names_both(tmp_path):
    """A full-softmax attempt that also forgets the scale: wrong outputs, the scale named, and the
    score matrix named from what was measured."""
    source = (CORPUS / "flash_full_scores.py").read_text(encoding="utf-8").replace(" / math.sqrt(q.shape[-1])", "")
    attempt = tmp_path / "flash.py"
    attempt.write_text(source, encoding="utf-8")
    result = grade(attempt)
    assert result.verdict is Verdict.WRONG_OUTPUT
    assert [d.id for d in result.diagnoses] == ["missing_scale", "flash_full_scores"]


# --- where it first goes wrong -------------------------------------------------------------------------


def _variant(tmp_path, corpus: str, old: str, new: str) -> Path:
    """A corpus attempt with one slip put in (the attempt must contain ``old`` once)."""
    source = (CORPUS / corpus).read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    path = tmp_path / f"{corpus[:-3]}_slip.py"
    path.write_text(source.replace("# expect: passed\n", "").replace(old, new), encoding="utf-8")
    return path


def _line_of(path: Path, text: str) -> int:
    (line,) = [n for n, code in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in code]
    return line


@pytest.mark.parametrize(("attempt", "line_has", "reason"), [
    # the key loop breaks one block early: the condition of the break, not the output it spoils
    ("flash_causal_block_skipped.py", "if is_causal and j >= i:", "guarded"),
    # m = m_new before alpha = exp(m - m_new): the line that made m and m_new one tensor
    ("flash_max_updated_before_rescale.py", "m = m_new", "twice"),
    # acc appended without acc / l: every step matches, the output stops short of the reference's
    # acc / l; the return right after the append (the bug's line is the append, one above)
    ("flash_final_division_missing.py", "return torch.cat(out, dim=2)", "short"),
    # the running max started at 0: its starting line and value
    ("flash_max_init_zero.py", "m = torch.zeros", "start"),
    # 1 / D for 1 / sqrt(D), applied to the scores: the scores' line and the factor
    ("scale_by_dim.py", "s = qi @ kj.transpose(-2, -1) * scale", "scaled"),
    # the accumulator not rescaled: its own update, holding what the reference has half-way through its line
    ("flash_acc_not_rescaled.py", "acc = acc + p @ vj", "incomplete"),
    ("flash_sum_not_rescaled.py", "l = l + p.sum(", "incomplete"),
])
def test_the_divergence_is_the_line_of_the_flash_mistake(attempt, line_has, reason, graded):
    result = graded(CORPUS / attempt)
    d = result.divergence
    assert not result.passed and d is not None, attempt
    assert d.line == _line_of(CORPUS / attempt, line_has) and line_has in d.code and d.reason == reason, d


def test_scale_named_in_words(graded):
    d = graded(CORPUS / "scale_by_dim.py").divergence
    words = wording.divergence_text(d)
    assert "times 0.3536" in words and "s = q_blk @ k_blk.transpose(-2, -1)" in words  # 1/8 for 1/sqrt(8), D = 8
    d = graded(CORPUS / "flash_max_init_zero.py").divergence
    assert "starts at 0 where the reference starts it at -inf" in wording.divergence_text(d)


@pytest.mark.parametrize(("old", "new", "line_has"), [
    # statistics kept in place, as a kernel keeps them in registers: the in-place update that lacks the factor
    ("row_sum.mul_(scale).add_(", "row_sum.add_(", "row_sum.add_("),
    ("o_tile.mul_(scale).add_(", "o_tile.add_(", "o_tile.add_("),
    # the tile's causal mask one diagonal too low: the mask's line
    (".triu(q0 - k0 + 1)", ".triu(q0 - k0)", ".triu(q0 - k0)"),
    # the causal skip one block early: the skip's condition
    ("if is_causal and k0 >= q0 + rows:", "if is_causal and k0 >= q0:", "if is_causal and k0 >= q0:"),
])
def test_in_place_statistics_point_at_the_slip(tmp_path, old, new, line_has):
    path = _variant(tmp_path, "ok_inplace_buffers.py", old, new)
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert result.divergence.line == _line_of(path, line_has), result.divergence


def test_the_scale_variable_is_blamed_where_it_is_computed(tmp_path):
    """The reference's own shape with scale = 1 / D: the tensors going into q_blk * scale are right,
    the number is not; the line that computes it, with both values."""
    source = EX.solution_path.read_text(encoding="utf-8").replace("scale = 1 / math.sqrt(D)", "scale = 1 / D")
    path = tmp_path / "flash.py"
    path.write_text(source, encoding="utf-8")
    d = grade(path).divergence
    assert d is not None and d.line == _line_of(path, "scale = 1 / D") and d.reason == "scalar"  # main's key for a wrong number
    assert d.name == "scale" and float(d.named) == pytest.approx(float(d.ref_named) ** 2, rel=1e-3)  # 1/D, 1/sqrt(D) (4 digits)


def test_row_tiles_line_up_block_by_block_and_the_missing_division_is_the_return(tmp_path):
    """All L query rows against (L, block) key tiles: each tile holds the reference's (block, block)
    tiles of those rows, in order, so the steps line up; the accumulator the loop builds is returned
    one step short, and the missing division is the return line, after the loop."""
    path = _variant(tmp_path, "ok_row_tiles_einsum.py", "return out / running_sum", "return out")
    result = grade(path)
    assert [d.id for d in result.diagnoses] == ["flash_final_division_missing"]
    d = result.divergence
    assert d is not None and d.line == _line_of(path, "return out") and d.reason == "short", d


def test_a_line_that_raises_before_any_step_is_named(tmp_path):
    """Nothing computed from the inputs before the line raised: that line, said as such."""
    path = _variant(tmp_path, "flash_final_division_missing.py", "    out = []\n", "    out = []\n    B = q.shape[9]\n")
    d = grade(path).divergence
    assert d is not None and d.reason == "raised_first" and d.line == _line_of(path, "B = q.shape[9]"), d
    assert f"line {d.line} raised before any tensor" in wording.divergence_text(d)


def test_a_zero_scale_is_blamed_where_it_is_set_though_the_loop_index_is_zero_too(tmp_path):
    """scale = 0: on the first block the loop index i holds the same number as scale; the number
    is the reference's scale's, so the line that sets scale is the one."""
    source = EX.solution_path.read_text(encoding="utf-8").replace("scale = 1 / math.sqrt(D)", "scale = 0 / math.sqrt(D)")
    path = tmp_path / "flash.py"
    path.write_text(source, encoding="utf-8")
    d = grade(path).divergence
    assert d is not None and d.line == _line_of(path, "scale = 0 / math.sqrt(D)") and d.name == "scale", d


def test_a_tensor_made_in_a_shape_the_reference_never_has_is_blamed_when_a_later_line_raises(tmp_path):
    """bq read off the heads axis: m is made (B, H, H, 1) and torch.maximum(m, …) raises two lines
    further down; the line that made m, not the one that raised."""
    source = EX.solution_path.read_text(encoding="utf-8").replace("bq = q_blk.shape[-2]", "bq = q_blk.shape[-3]")
    path = tmp_path / "flash.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path)
    d = result.divergence
    assert result.verdict is Verdict.ERROR and d is not None, result
    assert d.line == _line_of(path, "m = torch.full(") and d.reason == "raised_shape" and d.name == "m", d
    assert "torch.maximum(m" in wording.divergence_text(d)


def test_an_empty_query_block_is_the_line(tmp_path):
    """q[:, :, i:i - block_size]: every query block is empty, nothing after it has a shape the
    reference has; the line that made the empty block is the one."""
    source = EX.solution_path.read_text(encoding="utf-8").replace("q[:, :, i : i + block_size]", "q[:, :, i : i - block_size]")
    path = tmp_path / "flash.py"
    path.write_text(source, encoding="utf-8")
    d = grade(path).divergence
    assert d is not None and d.line == _line_of(path, "q[:, :, i : i - block_size]") and "0" in d.named, d


# --- memory held at once ---------------------------------------------------------------------------


def test_allocations_peak_counts_what_is_alive_together_not_what_was_freed():
    q, k, v = _qkv(1, 1, 32, 64, 8, dtype=torch.float32)

    def temporaries(q, k, v):  # one (32, 8) tile at a time, each freed before the next
        out = torch.zeros_like(q)
        for j in range(0, 64, 8):
            out = out + q @ k[:, :, j:j + 8].transpose(-2, -1) @ v[:, :, j:j + 8]
        return out

    def kept(q, k, v):  # the same tiles, kept in a list
        tiles = [q @ k[:, :, j:j + 8].transpose(-2, -1) for j in range(0, 64, 8)]
        return tiles

    small, big = _measure(temporaries, q, k, v), _measure(kept, q, k, v)
    assert small.elements == big.elements == 32 * 8
    assert small.peak < 5 * 32 * 8  # the output, a tile and a product or two
    assert big.peak == 8 * 32 * 8 and big.peak_count == 8
    assert "tiles = [q @ k" in big.peak_code


@pytest.mark.parametrize("attempt", ["flash_scores_kept_tiles.py", "flash_scores_kept_rows.py",
                                     "flash_scores_kept_block_rows.py"])
def test_scores_kept_for_a_second_pass_fail_structure_with_what_was_held(graded, attempt):
    """No tile over the bound, but the list holds the scores of every key block at once."""
    result = graded(CORPUS / attempt)
    assert result.verdict is Verdict.STRUCTURE and [d.id for d in result.diagnoses] == ["flash_scores_kept"]
    (check,) = [c for c in result.checks if c.id == "structure_memory"]
    p = check.message.params
    assert check.passed is False and p["largest"] <= p["allowed"] < p["held"] < p["peak"]
    assert p["held"] == max(p["allowed"], 12 * p["largest"]) and p["line"] > 0
    assert "elements at once" in texts.render(check.message)


def test_every_row_of_a_long_case_is_graded(graded):
    """Rows 1, 2, 5, 6 … of every 8 wrong, on the long inputs only: found."""
    result = graded(CORPUS / "flash_long_rows_interleaved.py")
    assert result.verdict is Verdict.WRONG_OUTPUT
    (check,) = [c for c in result.checks if c.id == "output"]
    assert check.passed is False


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# no softmax call (exp and running sums), and its causal mask is built per tile from arange, not tril
MUTATION = {"focus": ("arith", "mask_drop"), "not_offered": {"softmax_dim", "causal_tri"}}


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)",)


# --- the mistakes as edits of the reference (issue 25) ---------------------------------------------
#
# Until flash's mistakes became data ([grading.edits]), the kind computed each knob in code: that code
# is tests/functional_variants.py's blocked, the fixed twin every edited variant is held to here, on
# every case of every config, with both fills the judge tries.


def _edited(kind, ci: int, knob, fill: float):
    """The variant the grader runs for ``knob`` (one knob or a tuple of two) and ``fill``."""
    return kind.variant(ci, frozenset(), knob, fill)


def _twin(case, knob, fill, every_block=None, fill_read: list | None = None) -> torch.Tensor:
    i = case.inputs
    return functional_variants.blocked(i["q"], i["k"], i["v"], i["is_causal"], i["block_size"] or 64, knob, fill,
                                       every_block=every_block, fill_read=fill_read)


def _same(case, got: torch.Tensor, want: torch.Tensor) -> bool:
    """Bit for bit where the head size D is a power of 4 (every scale a knob uses, 1/sqrt(D), sqrt(D),
    1/D, is then a power of two: config 0, the large-score and the long cases); elsewhere within the
    grader's own tolerance (RTOL, ATOL: what the judge cannot tell apart), since the reference scales q
    before the product and the twin the scores after it, and a mistake's exp() can amplify that last
    bit (scores times sqrt(D), a max not carried: up to 4e-4 relatively on an entry near 0)."""
    if got.shape != want.shape or not torch.equal(got.isnan(), want.isnan()):
        return False
    D = case.inputs["q"].shape[-1]
    if D & (D - 1) == 0 and D.bit_length() % 2 == 1:  # 1, 4, 16, 64
        return torch.equal(got.nan_to_num(), want.nan_to_num())
    return torch.allclose(got.nan_to_num(), want.nan_to_num(), rtol=RTOL, atol=ATOL)


def _differences(kind, knob, fills=variants.FILLS, configs=None, every_block=None, long=True) -> list[tuple]:
    """The (config, case, fill) where the edited variant and the twin disagree (``long``: on the
    structure's long cases too)."""
    wrong = []
    skipped = () if long else set(kind.long_cases())  # the long cases' names, worked out once, not per case
    for ci in configs if configs is not None else range(len(kind.configs)):
        unfilled = {}  # case index -> the twin's output where it filled no tile: the same for every fill
        for fill in fills:
            edited = _edited(kind, ci, knob, fill)
            for n, case in enumerate(kind.cases(ci)):  # the config's inputs, drawn once (kind.cases)
                if case.name in skipped:
                    continue
                with torch.inference_mode():  # no autograd bookkeeping: the same kernels, less per op
                    want = unfilled.get(n)
                    if want is None:
                        read: list = []
                        want = _twin(case, knob, fill, every_block, read)
                        if not read:
                            unfilled[n] = want
                    if not _same(case, edited(case)["out"], want):
                        wrong.append((ci, case.name, fill))
    return wrong


def _wide(kind, knob: str) -> bool:
    """The knob visits every key block (its edits loop to S), where the reference skips the later ones."""
    return any(e["new"] == "range(0, S, block_size)" for e in kind.grading.edits[knob])


def test_every_knob_is_edits_each_found_once():
    kind = kind_for(EX, 0)
    reference = EX.solution_path.read_text(encoding="utf-8")
    assert set(kind.grading.edits) == set(kind.knobs())
    for knob in kind.knobs():
        assert edited_source(reference, kind.grading.edits[knob]) != reference, knob
    assert reference.count(kind.grading.fill) == 2  # the mask's fill and the running max's start


def test_without_a_knob_the_edited_reference_is_the_twin():
    assert _differences(kind_for(EX, 0), "") == []


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_each_edit_is_the_twins_mistake_on_every_case_with_both_fills(knob):
    assert _differences(kind_for(EX, 0), knob) == []


def _pairs(kind) -> list[tuple[str, str]]:
    """Every pair of two of the pairs_first mistakes (the ones the judge pairs first), and an even
    sample of the others, in the order of the knobs."""
    knobs = kind.knobs()
    first = set(kind.grading.pairs_first)
    pairs = [(a, b) for i, a in enumerate(knobs) for b in knobs[i + 1:] if a.split(":")[0] != b.split(":")[0]]
    own = [p for p in pairs if {k.split(":")[0] for k in p} <= first]
    rest = [p for p in pairs if p not in own]
    return own + rest[::7]


def test_the_pair_sample_holds_every_pairs_first_family_pair():
    kind = kind_for(EX, 0)
    families = {frozenset(k.split(":")[0] for k in p) for p in _pairs(kind)}
    first = kind.grading.pairs_first
    assert {frozenset((a, b)) for a in first for b in first if a != b} <= families


def test_two_knobs_are_both_edits():
    """Each pair of the sample either computes the twin's pair, or clashes: two edits of one text (two
    scales, two causal masks), which the twin resolved by letting one knob win and which names
    nothing now. A knob that visits every key block with one whose loop skips the later ones (":…skip")
    visits them all (the twin let the skip win: compared with it visiting them all). Made in the other
    order, a pair is the same source (its edits touch different text). Computed on configs 0 (bit for
    bit) and 1 (D = 8: within the grader's tolerance), the long cases left to the single knobs."""
    kind = kind_for(EX, 0)
    reference, edits = kind.edited, kind.grading.edits
    composed, clashed, wrong = 0, [], []
    for pair in _pairs(kind):
        try:
            source = reference.source(pair)
        except EditError:
            a, b = (edits[k] for k in pair)
            assert any(x["old"] in y["old"] or y["old"] in x["old"] for x in a for y in b), pair
            with pytest.raises(EditError):
                reference.source(pair[::-1])
            clashed.append(pair)
            continue
        assert reference.source(pair[::-1]) == source, pair
        composed += 1
        mixed = any(_wide(kind, k) for k in pair) and any(k.endswith("skip") for k in pair)
        wrong += [(pair, d) for d in _differences(kind, pair, configs=[0, 1], every_block=True if mixed else None, long=False)]
    assert wrong == []
    for pair in clashed:  # only two scales or two causal masks clash
        scales = {k.split(":")[0] in ("missing_scale", "scale_inverted", "scale_by_dim") for k in pair}
        assert scales == {True} or all(EX.mistake(k.split(":")[0]).mask for k in pair), pair
    assert composed > 4 * len(clashed)


def test_two_scales_clash_and_name_nothing():
    kind = kind_for(EX, 0)
    call = _edited(kind, 0, ("missing_scale", "scale_by_dim"), float("-inf"))
    with pytest.raises(EditError):
        call(kind.cases(0)[0])
