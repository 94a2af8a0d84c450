"""sliding_window: the reference against torch and a loop, the band and its mistaken masks, and
what the grader's cases cover (windows 1, 2, 3 and >= T on sequences long enough to matter)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnprep import exercises
import functional_variants
from attnprep.grader.cases import MAIN_T
from attnprep.grader.kinds import kind_for
from attnprep.solutions.sliding_window import sliding_window_attention, sliding_window_mask
from per_exercise import MASKED_ATTENTION_PAIRS, assert_pair_composes


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "attention_functions",
    "objects": ("sliding_window_mask", "sliding_window_attention"),
    "signatures": {"sliding_window_mask": "seq_len, window, device=None",
                   "sliding_window_attention": "q, k, v, window, attention_mask=None"},
}

EX = exercises.get("sliding_window")


def loop_mask(T: int, window: int) -> torch.Tensor:
    return torch.tensor([[i - window < j <= i for j in range(T)] for i in range(T)])


@pytest.mark.parametrize("T", [1, 2, 5, 8, 13])
@pytest.mark.parametrize("window", [1, 2, 3, 4, 7, 20])
def test_mask_is_the_band_written_as_a_loop(T, window):
    m = sliding_window_mask(T, window)
    assert m.dtype == torch.bool and m.shape == (T, T)
    assert torch.equal(m, loop_mask(T, window))
    assert torch.equal(m.sum(-1), torch.clamp(torch.arange(T) + 1, max=window))  # window keys, fewer at the start
    assert torch.equal(functional_variants.band(T, T, window), m)


def test_a_window_as_long_as_the_sequence_is_the_causal_mask():
    for T in (1, 4, 9):
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        assert torch.equal(sliding_window_mask(T, T), causal)
        assert torch.equal(sliding_window_mask(T, T + 5), causal)
        assert torch.equal(functional_variants.band(T, T, None), causal)


@pytest.mark.parametrize(("B", "H", "T", "D"), [(1, 1, 1, 4), (2, 3, 7, 5), (3, 2, 12, 8), (1, 4, 9, 3)])
@pytest.mark.parametrize("window", [1, 2, 3, 5, 16])
@pytest.mark.parametrize("padded", [False, True])
def test_reference_equals_torch_sdpa_with_the_band(B, H, T, D, window, padded):
    g = torch.Generator().manual_seed(B * 100 + T * 10 + window)
    q, k, v = (torch.randn(B, H, T, D, generator=g, dtype=torch.float64) for _ in range(3))
    mask = None
    allowed = loop_mask(T, window)[None, None]
    if padded:
        lengths = torch.randint(1, T + 1, (B,), generator=g)
        starts = T - lengths  # left padding: every real query still sees itself
        mask = torch.arange(T)[None, :] >= starts[:, None]
        allowed = allowed & mask[:, None, None, :]
    got = sliding_window_attention(q, k, v, window, mask)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    rows = torch.ones(B, T, dtype=torch.bool) if mask is None else mask
    torch.testing.assert_close(got[rows[:, None, :].expand(B, H, T)], want[rows[:, None, :].expand(B, H, T)])


def test_mistaken_bands_are_what_the_edited_mask_function_makes():
    """The mask a mask knob's edits make the reference's mask function return (what the kind names
    a mask function's mistake by), and the twin's band for it."""
    kind = kind_for(EX)
    T, w = 7, 3
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    want = {"window_off_by_one": (j <= i) & (i - j <= w), "window_not_causal": (i - j).abs() < w,
            "window_ignored": j <= i, "window_mask_inverted": ~((j <= i) & (i - j < w)),
            "causal_masks_diagonal": (j < i) & (i - j < w), "causal_leaks_next": (j <= i + 1) & (i - j < w)}
    assert set(want) <= set(kind.mask_named) | {kind.mask_inverted}
    assert torch.equal(kind.mask_made(T, {"window": w}), (j <= i) & (i - j < w))
    for knob, band in want.items():
        assert torch.equal(kind.mask_made(T, {"window": w}, knob), band), knob
        assert torch.equal(functional_variants.band(T, T, w, knob), band), knob


def test_graded_windows_matter_and_include_the_causal_limit():
    kind = kind_for(EX)
    windows = [c["window"] for c in kind.configs]
    assert {1, 2, 3} <= set(windows) and any(w >= MAIN_T for w in windows)
    assert {c["window"] for c in EX.grading["mask_checks"]} >= {1, 2, 3} and max(c["window"] for c in EX.grading["mask_checks"]) >= MAIN_T
    for ci, config in enumerate(kind.configs):
        cases = kind.cases(ci)
        assert all(case.inputs["window"] == config["window"] for case in cases)
        longest = max(case.queries.shape[1] for case in cases)
        assert longest == MAIN_T
        if config["window"] < MAIN_T:  # some query has more keys before it than the window holds
            assert not torch.equal(kind.allowed(cases[0], 0), torch.tril(torch.ones(MAIN_T, MAIN_T, dtype=torch.bool)))


def test_every_window_knob_differs_from_the_reference_in_some_config():
    kind = kind_for(EX)
    for knob in ("window_off_by_one", "window_not_causal", "window_ignored", "window_mask_inverted"):
        differs = []
        for ci in range(len(kind.configs)):
            call, ref = kind.variant(ci, frozenset(), knob, float("-inf")), kind.reference(ci)
            case = next(c for c in kind.cases(ci) if c.name == "plain+causal")
            differs.append(not torch.allclose(call(case)["out"], ref(case)["out"], equal_nan=False))
        assert any(differs), knob
        # the window >= T config cannot tell a window mistake from the reference, except inversion
        big = next(ci for ci, c in enumerate(kind.configs) if c["window"] >= MAIN_T)
        assert differs[big] == (knob in ("window_not_causal", "window_mask_inverted")), knob


def test_mask_function_is_checked_with_every_window():
    from attnprep.solutions import sliding_window as solution

    kind = kind_for(EX)
    extra = kind.child_extra({n: getattr(solution, n) for n in EX.contract.objects})
    checks = {c.id: c.passed for c in kind.extra_checks(extra)}
    assert checks == {"mask_function": True, "mask_device": True}
    assert not kind.extra_diagnoses(extra)
    off = dict(extra)
    for key in [k for k in extra if k.endswith("window=2")]:
        T = int(key.split(":")[0])
        off[key] = dict(extra[key], values=functional_variants.band(T, T, 3).long().tolist())  # a window of 3 for 2
    assert {c.id: c.passed for c in kind.extra_checks(off)}["mask_function"] is False


def test_a_mask_built_in_one_line_is_named_by_what_the_line_makes(tmp_path):
    """Issue 30 §3: the wrong piece of a one-line mask is `(i - window)[:, None]`, but the line
    makes a (T, T) mask: the divergence says (T, T), not the piece's (T) or (T, 1)."""
    from attnprep import wording

    path = tmp_path / "sliding_window.py"
    path.write_text(
        "# attnprep: sliding_window\nimport math\n\nimport torch\n\n\n"
        "def sliding_window_mask(seq_len, window, device=None):\n"
        "    i = torch.arange(seq_len, device=device)\n"
        "    return (i[None, :] <= i[:, None]) & (i[None, :] >= (i - window)[:, None])\n\n\n"
        "def sliding_window_attention(q, k, v, window, attention_mask=None):\n"
        "    B, H, T, D = q.shape\n"
        "    allowed = sliding_window_mask(T, window, q.device)\n"
        "    if attention_mask is not None:\n"
        "        allowed = allowed & attention_mask[:, None, None, :]\n"
        "    scores = q @ k.transpose(-2, -1) / math.sqrt(D)\n"
        "    scores = scores.masked_fill(~allowed, float(\"-inf\"))\n"
        "    return scores.softmax(-1) @ v\n")
    from attnprep.grader import grade

    result = grade(path)
    d = result.divergence
    assert d is not None and d.line == 9 and d.reason == "made"
    assert d.named == "(T, T)", wording.divergence_text(d)


# tests/test_report.py: words of this exercise's own that a shared mistake's fix may use here and in no
# exercise that does not declare them, and fixes that must use them.
FIX_WORDS = ("q.size(-1)",)
FIX_SAYS = {"masks_combined_or": "sliding_window_mask("}


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------



@pytest.mark.parametrize("pair", MASKED_ATTENTION_PAIRS, ids=str)
def test_two_edits_compose(pair):
    """Two knobs at once are both edit lists made in order, and differ somewhere from each alone."""
    assert_pair_composes(EX, pair)


