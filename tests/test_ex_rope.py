"""The rope exercise: its reference against independent forms of RoPE, its graded cases against
the contract, the relative-position check, and how the grader treats the two pairing conventions.

The reference (solutions/rope.py) is what every attempt is graded against, so it is checked here
against code that shares nothing with it: angles from Python's math one scalar at a time, a complex
rotation of the pairs (x[i], x[i + D/2]), and Meta's interleaved complex form after the permutation
Hugging Face's Llama conversion applies to W_q and W_k.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader import grade
from attnprep.grader.kinds import kind_for
from attnprep.grader.result import Verdict
from attnprep.solutions.rope import apply_rope, rope_cache, rotate_half
from test_divergence import _with
from per_exercise import same, variant_outputs


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "rope_functions",
    "objects": ("rope_cache", "apply_rope"),
    "signatures": {"rope_cache": "seq_len, head_dim, theta=10000.0, device=None", "apply_rope": "x, cos, sin, positions=None"},
}

EX = exercises.get("rope")
F64 = torch.float64
CASES = [(8, 10000.0), (6, 500.0), (16, 1e6), (2, 10000.0)]  # (head_dim, theta): D/2 odd, D = 2


def angle(t: int, i: int, D: int, theta: float) -> float:
    return t * theta ** (-2 * i / D)


@pytest.mark.parametrize("D, theta", CASES)
def test_cache_matches_the_formula_scalar_by_scalar(D, theta):
    S = 13
    cos, sin = rope_cache(S, D, theta)
    assert cos.shape == sin.shape == (S, D) and cos.dtype == sin.dtype == torch.float32
    for t in range(S):
        for j in range(D):
            a = angle(t, j % (D // 2), D, theta)  # cat([freqs, freqs]): column j and j + D/2 share an angle
            assert abs(cos[t, j].item() - math.cos(a)) < 1e-5 and abs(sin[t, j].item() - math.sin(a)) < 1e-5
    default = rope_cache(S, D)
    torch.testing.assert_close(default[0], rope_cache(S, D, 10000.0)[0], atol=0, rtol=0)


def test_cache_honours_device():
    cos, sin = rope_cache(5, 8, device="meta")
    assert cos.device.type == sin.device.type == "meta"


def _rotate_pairs(x, positions, D, theta):
    """Each pair (x[i], x[i + D/2]) as the complex number x[i] + j·x[i + D/2], times e^(j·angle)."""
    half = D // 2
    z = torch.complex(x[..., :half].double(), x[..., half:].double())
    angles = positions.double()[..., None] * torch.tensor([theta ** (-2 * i / D) for i in range(half)], dtype=F64)
    if positions.dim() == 2:
        angles = angles[:, None]  # (B, 1, T, D/2)
    z = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1)


@pytest.mark.parametrize("D, theta", CASES)
@pytest.mark.parametrize("kind", ["default", "offset (T,)", "per-sample (B, T)", "decode (T=1)"])
def test_apply_matches_a_complex_rotation_of_the_halves(D, theta, kind):
    g = torch.Generator().manual_seed(D)
    B, H, T, S = 3, 2, 5, 24
    if kind == "decode (T=1)":
        T = 1
    x = torch.randn(B, H, T, D, generator=g, dtype=F64)
    cos, sin = (t.double() for t in rope_cache(S, D, theta))
    positions = {
        "default": None,
        "offset (T,)": torch.arange(7, 7 + T),
        "per-sample (B, T)": torch.stack([torch.arange(T), torch.arange(4, 4 + T), torch.arange(11, 11 + T)]),
        "decode (T=1)": torch.tensor([19]),
    }[kind]
    out = apply_rope(x, cos, sin, positions)
    assert out.shape == x.shape and out.dtype == F64
    want = _rotate_pairs(x, torch.arange(T) if positions is None else positions, D, theta)
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)  # the cache itself is float32


def test_apply_keeps_a_bfloat16_x_in_bfloat16_to_half_an_ulp():
    x = torch.randn(2, 3, 7, 8, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    cos, sin = rope_cache(16, 8)
    out = apply_rope(x, cos, sin)
    assert out.dtype == torch.bfloat16
    exact = apply_rope(x.double(), cos.double(), sin.double())
    ulp = torch.finfo(torch.bfloat16).eps
    assert ((out.double() - exact).abs() <= ulp * exact.abs().clamp_min(1)).all()


def test_rotate_half_turns_each_pair_by_ninety_degrees():
    x = torch.arange(1.0, 9.0)
    assert rotate_half(x).tolist() == [-5.0, -6.0, -7.0, -8.0, 1.0, 2.0, 3.0, 4.0]
    assert torch.equal(rotate_half(rotate_half(x)), -x)  # two quarter turns


def test_scores_depend_on_the_offset_only_and_norms_are_kept():
    D, S = 16, 40
    cos, sin = (t.double() for t in rope_cache(S, D))
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, D, generator=g, dtype=F64)
    rq = apply_rope(q.expand(1, 1, S, D), cos, sin)[0, 0]
    rk = apply_rope(k.expand(1, 1, S, D), cos, sin)[0, 0]
    for m, n, shift in [(5, 2, 17), (30, 31, 3), (0, 9, 20)]:
        assert abs(rq[m] @ rk[n] - rq[m + shift] @ rk[n + shift]) < 1e-5  # float32 angles
    torch.testing.assert_close(rq.norm(dim=-1), q.norm().expand(S))
    assert abs(rq[5] @ rk[2] - q @ k) > 1e-3  # it does rotate


def _edited(*knobs: str) -> dict:
    """The reference's functions with the edits of ``knobs`` made."""
    return kind_for(EX, seed=0).edited.namespace(knobs)


def test_rotate_half_is_meta_interleaved_rope_after_hugging_faces_permutation():
    """Hugging Face's convert_llama_weights_to_hf permutes W_q / W_k rows so that Meta's adjacent
    pairs become halves: the two conventions are the same rotation on permuted features."""
    D, T = 8, 6
    x = torch.randn(2, 1, T, D, generator=torch.Generator().manual_seed(3), dtype=F64)
    cos, sin = (t.double() for t in rope_cache(T, D))
    perm = torch.cat([torch.arange(0, D, 2), torch.arange(1, D, 2)])  # interleaved -> halves
    meta = _edited("rope_interleaved_pairs")["apply_rope"](x, cos, sin)  # Meta / DeepSeek: adjacent pairs
    torch.testing.assert_close(apply_rope(x[..., perm], cos, sin), meta[..., perm])
    assert not torch.allclose(apply_rope(x, cos, sin), meta)  # unpermuted they differ: a named mistake


# --- the kind ---------------------------------------------------------------------------------


def test_graded_cases_cover_the_contract():
    kind = kind_for(EX, seed=0)
    thetas = [c.get("theta") for c in kind.configs]
    assert None in thetas and any(t not in (None, 10000.0) for t in thetas)  # the default and a given theta
    assert any((c["head_dim"] // 2) % 2 == 1 for c in kind.configs)  # D/2 odd
    for ci, c in enumerate(kind.configs):
        cases = kind.cases(ci)
        applied = [case for case in cases if "x" in case.inputs]
        positions = [case.inputs["positions"] for case in applied]
        assert any(p is None for p in positions)
        assert any(p is not None and p.dim() == 1 and p.min() > 0 for p in positions)  # T_past + t
        assert any(p is not None and p.dim() == 2 and not torch.equal(p[0], p[1]) for p in positions)
        assert any(case.inputs["x"].shape[2] == 1 and case.inputs["positions"] is not None for case in applied)
        assert all(p is None or int(p.max()) < c["cache_len"] for p in positions)
        low = [case for case in applied if case.dtype == "bfloat16"]
        assert len(low) == 1 and low[0].inputs["x"].dtype == torch.bfloat16
        assert low[0].inputs["cos"].dtype == torch.float32 and low[0].tolerance == (4 * 2**-7, 4 * 2**-7)
        (cache,) = [case for case in cases if "x" not in case.inputs]
        assert kind.expected_shapes(ci, cache) == {"cos": (c["cache_len"], c["head_dim"]), "sin": (c["cache_len"], c["head_dim"])}


@pytest.mark.parametrize("knob, outputs", [
    ("rope_theta_ignored", {"cos", "sin"}),
    ("rope_emb_repeat_interleave", {"cos", "sin"}),
    ("rope_positions_ignored", {"out"}),
    ("rope_interleaved_pairs", {"out"}),
    ("rope_interleaved_pairs:gptj", {"cos", "sin", "out"}),
    ("rotate_half_cos_sin_swapped:cache", {"cos", "sin"}),
    ("rotate_half_cos_sin_swapped", {"cos", "sin", "out"}),
])
def test_each_knob_changes_what_it_should(knob, outputs):
    """The cache is graded on its own and apply with the reference's cache: a knob of one leaves the
    other's outputs as they were."""
    kind = kind_for(EX, seed=0)
    changed = set()
    for ci in range(len(kind.configs)):
        variant, reference = kind.variant(ci, frozenset(), knob, 0.0), kind.reference(ci)
        for case in kind.cases(ci):
            got, want = variant(case), reference(case)
            rtol, atol = case.tolerance or (0.0, 1e-4)  # bfloat16: a few ulps
            for name in want:
                if not torch.allclose(got[name].double(), want[name].double(), rtol=rtol, atol=atol):
                    changed.add(name)
    assert changed == outputs


def test_positions_ignored_only_shows_where_positions_are_given():
    kind = kind_for(EX, seed=0)
    variant, reference = kind.variant(0, frozenset(), "rope_positions_ignored", 0.0), kind.reference(0)
    for case in kind.cases(0):
        if "x" in case.inputs:
            rtol, atol = case.tolerance or (0.0, 1e-5)
            same = torch.allclose(variant(case)["out"].double(), reference(case)["out"].double(), rtol=rtol, atol=atol)
            positions = case.inputs["positions"]
            assert same == (positions is None or torch.equal(positions, torch.arange(case.inputs["x"].shape[2])))


def _extra(functions: dict) -> dict:
    return kind_for(EX, seed=0).child_extra(functions)


def test_relative_check_passes_any_rotation_and_fails_what_is_not_one():
    kind = kind_for(EX, seed=0)

    def checks(cache, rotate) -> dict:
        return {c.id: c.passed for c in kind.extra_checks(_extra({"rope_cache": cache, "apply_rope": rotate}))}

    assert checks(rope_cache, apply_rope) == {"relative": True, "cache_device": True}
    # the interleaved form on its own cache is a rotation too: wrong for the contract, not for this check
    gptj_cache, gptj = (_edited("rope_interleaved_pairs:gptj")[n] for n in ("rope_cache", "apply_rope"))
    assert checks(gptj_cache, gptj)["relative"] is True
    # rotate_half on a repeat_interleave cache is not: pairs (i, i + D/2) get two different angles
    assert checks(gptj_cache, apply_rope)["relative"] is False
    no_device = lambda S, D, theta=10000.0, device=None: rope_cache(S, D, theta)  # noqa: E731
    assert checks(no_device, apply_rope)["cache_device"] is False


def test_a_cache_that_is_not_a_pair_is_a_contract_failure(tmp_path):
    attempt = tmp_path / "rope.py"
    attempt.write_text(
        "# attnprep: rope\nimport torch\n\n"
        "def rope_cache(seq_len, head_dim, theta=10000.0, device=None):\n"
        "    freqs = torch.outer(torch.arange(seq_len).float(), 1.0 / theta ** (torch.arange(0, head_dim, 2).float() / head_dim))\n"
        "    return torch.polar(torch.ones_like(freqs), freqs)  # Meta's freqs_cis\n\n"
        "def apply_rope(x, cos, sin, positions=None):\n    return x\n",
        encoding="utf-8",
    )
    result = grade(attempt)
    assert result.verdict is Verdict.CONTRACT
    assert result.checks[0].message.key == "rope_functions.cache_not_pair"
    assert "complex64" in result.checks[0].message.params["got"]


def test_the_interleaved_convention_is_named_as_a_mix_up_of_the_two(tmp_path):
    """An MLA-style attempt (DeepSeek's adjacent pairs, the mla stub's helpers) graded as rope."""
    source = (exercises.SOLUTIONS_DIR / "mla.py").read_text(encoding="utf-8")
    lines = source.splitlines()
    helpers = "\n".join(lines[lines.index("# region rope-helpers") + 1: lines.index("# endregion rope-helpers")])
    attempt = tmp_path / "rope.py"
    attempt.write_text(
        "# attnprep: rope\nimport torch\n\n" + helpers + "\n\n"
        "def rope_cache(seq_len, head_dim, theta=10000.0, device=None):\n"
        "    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim)\n"
        "    emb = torch.outer(torch.arange(seq_len, device=device).float(), inv_freq).repeat(1, 2)\n"
        "    return emb.cos(), emb.sin()\n\n"
        "def apply_rope(x, cos, sin, positions=None):\n"
        "    B, H, T, D = x.shape\n"
        "    if positions is None:\n"
        "        positions = torch.arange(T, device=x.device)\n"
        "    c, s = cos[positions][..., : D // 2], sin[positions][..., : D // 2]\n"
        "    if positions.dim() == 2:\n"
        "        c, s = c[:, None], s[:, None]\n"
        "    x1, x2 = x.float()[..., 0::2], x.float()[..., 1::2]\n"
        "    out = torch.stack([x1 * c - x2 * s, x1 * s + x2 * c], dim=-1).flatten(-2)\n"
        "    return out.to(x.dtype)\n",
        encoding="utf-8",
    )
    result = grade(attempt)
    assert result.verdict is Verdict.WRONG_OUTPUT
    assert [d.id for d in result.diagnoses] == ["rope_interleaved_pairs"]
    assert {c.id: c.passed for c in result.checks}["relative"] is True  # it is a rotation, of other pairs


def test_a_half_that_takes_the_whole_last_dim_gets_a_line(tmp_path):
    """half = D // 1: x2 is empty, rotate_half(x) is x. The finder meets an empty tensor (which once
    made it raise, and the report said nothing) and points at the split of x."""
    source = EX.solution_path.read_text(encoding="utf-8").replace("half = x.shape[-1] // 2", "half = x.shape[-1] // 1")
    path = tmp_path / "rope.py"
    path.write_text(source, encoding="utf-8")
    result = grade(path, "rope")
    d = result.divergence
    assert not result.passed and d is not None, result
    lines = source.splitlines()
    made = next(n for n, code in enumerate(lines, 1) if "half = x.shape[-1] // 1" in code)
    assert abs(d.line - made) <= 2, d


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"min": 30, "sample": 6, "focus": ("sign", "cast"),
            "families": {"constant", "split_order", "arith", "sign", "cast", "matmul_swap"}}


# --- where the divergence finder points (tests/test_divergence.py) ----------------------------------


@pytest.mark.parametrize(("old", "new", "reason"), [
    ("torch.arange(0, d, 2, device=device)", "torch.arange(1, d, 2, device=device)", "values"),
    ("torch.outer(m, theta_i)", "torch.outer(m + 1, theta_i)", "values"),
    ("def rope_cache(seq_len, head_dim, theta=10000.0, device=None):", "def rope_cache(seq_len, head_dim, theta=1000.0, device=None):",
     "scalar"),
])
def test_a_wrong_rope_cache_gets_a_line(tmp_path, old, new, reason):
    """rope_cache takes sizes, no tensors: every tensor it makes is traced, and a wrong default
    theta is pointed at where the default is written."""
    path, line = _with(tmp_path, "rope/ok_interview_notes.py", old, new)
    result = grade(path)
    assert not result.passed and result.divergence is not None
    assert (result.divergence.line, result.divergence.reason) == (line, reason), result.divergence


def test_a_mistake_in_some_cases_is_named_with_those_cases(graded):
    """Issue 24 (tests/test_names.py): a mistake made in some cases only names those cases."""
    result = graded(Path(__file__).parent / "corpus" / "rope" / "positions_1d_ignored.py")
    (diagnosis,) = result.diagnoses
    assert diagnosis.id == "rope_positions_ignored"
    group = diagnosis.evidence[0]
    assert group.key == "evidence.case_group"
    # exactly the cases with (T,) positions; those with (B, T) or (B, 1) positions are honoured
    assert set(group.params["cases"].split(", ")) == {"chunk of 3 after 9 cached tokens", "decode step at position 12"}
    assert group.params["others"] > 0


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


PAIRS = [("rope_exponent_arange_half", "rope_emb_repeat_interleave"), ("rope_exponent_arange_half", "rope_positions_ignored"),
         ("rope_theta_ignored", "rope_inv_freq_not_inverted"), ("rope_inv_freq_not_inverted", "rope_theta_ignored"),
         ("rope_interleaved_pairs", "rotate_half_cos_sin_swapped"), ("rotate_half_sign_flipped", "rope_positions_ignored"),
         ("rope_theta_ignored", "rotate_half_sign_flipped:missing"), ("rope_interleaved_pairs:gptj", "rope_exponent_arange_half")]


def _outputs(kind, ci: int, knob) -> list[dict]:
    return variant_outputs(kind, ci, knob, 0.0)


@pytest.mark.parametrize("pair", PAIRS, ids=str)
def test_two_edits_compose(pair):
    """Two knobs at once: a cache knob with an apply knob gives each function's outputs of its own
    knob; two knobs of one function give outputs that neither knob alone gives."""
    kind = kind_for(EX, seed=0)
    changes = {k: set() for k in pair}
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        for case, got in zip(kind.cases(ci), _outputs(kind, ci, pair[0])):
            with torch.no_grad():
                want = reference(case)
            changes[pair[0]] |= {n for n in want if not same(case, got[n], want[n])}
        for case, got in zip(kind.cases(ci), _outputs(kind, ci, pair[1])):
            with torch.no_grad():
                want = reference(case)
            changes[pair[1]] |= {n for n in want if not same(case, got[n], want[n])}
    apart = not (changes[pair[0]] & changes[pair[1]])
    new = False
    for ci in range(len(kind.configs)):
        alone = [_outputs(kind, ci, k) for k in pair]
        for n, (case, both) in enumerate(zip(kind.cases(ci), _outputs(kind, ci, pair))):
            for name in both:
                if apart:  # each output is the one knob's that changes it
                    owner = pair[0] if name in changes[pair[0]] else pair[1]
                    assert same(case, both[name], alone[pair.index(owner)][n][name]), (pair, ci, str(case.name), name)
                else:
                    new |= all(not same(case, both[name], a[n][name]) for a in alone)
    assert apart or new, pair


def test_two_knobs_are_both_made():
    """The variants take two knobs at once: the pair differs from each of its knobs alone on some
    case (neither is dropped)."""
    from attnprep.grader.kinds import kind_for

    pair = ("rope_exponent_arange_half", "rope_emb_repeat_interleave")
    kind = kind_for(EX, 0)
    cases = kind.cases(0)
    both = variant_outputs(kind, 0, pair)
    for alone in (variant_outputs(kind, 0, k) for k in pair):
        assert any(not same(c, b[n], a[n]) for c, b, a in zip(cases, both, alone) for n in b), pair
