"""Where a cached module first goes wrong (kv_cache, mla_decode): the attempt is traced through the
kind's script of calls (prefill, one-token steps, a chunk) and so is the reference (the kind's
``trail_reference``), so the two trails line up call by call; the report names the call ("step 2
(pos 5)") and the line.

The buggy attempts are a correct corpus attempt with one realistic slip; each test finds the line of
the slip in the file, so the expectation is the slip's line, not a number copied from a run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import exercises, wording
from attnprep.grader import divergence, engine, found, grade

CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def slipped(tmp_path: Path, base: str, old: str, new: str) -> tuple[Path, int]:
    """The corpus attempt ``base`` with ``old`` replaced by ``new``, and the line ``new`` starts on."""
    source = (CORPUS / base).read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    source = source.replace(old, new)
    path = tmp_path / Path(base).name.replace("ok_", "slip_")
    path.write_text(source, encoding="utf-8")
    return path, source[: source.index(new)].count("\n") + 1 + new[: len(new) - len(new.lstrip("\n"))].count("\n")


KV = "kv_cache/ok_plain.py"
MLA = "mla_decode/ok_plain_einsum.py"

SLIPS = [
    # the chunk's mask not offset by the cached length: right in the prefill, wrong from the first decode step
    pytest.param(KV, "diagonal=S - T)", "diagonal=0)", "step 2 (pos 5)", id="kv-mask-not-offset"),
    # an offset one short in the decode steps only (each new token loses the key just before it)
    pytest.param(KV, "diagonal=S - T)", "diagonal=S - T - 1 if cache is not None else 0)", "step 2 (pos 5)",
                 id="kv-mask-offset-by-one"),
    # the new keys concatenated before the cached ones
    pytest.param(KV, "k = torch.cat([cache[0], k], dim=2)", "k = torch.cat([k, cache[0]], dim=2)", "step 2 (pos 5)",
                 id="kv-new-keys-first"),
    # the cache concatenated before the RoPE of the new keys: the cached keys are rotated a second time
    pytest.param(MLA, """        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs).squeeze(2)
        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
""", """        if cache is not None:
            c_kv = torch.cat([cache[0], c_kv], dim=1)
            k_pe = torch.cat([cache[1], k_pe], dim=1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), precompute_freqs_cis(rope, S, self.theta, device=x.device)).squeeze(2)
""", "step 2 (pos 5)", id="mla-cache-before-rope"),
    # the decode step's causal mask at position 0 instead of T_past
    pytest.param(MLA, ".tril(diagonal=past)", ".tril()", "step 2 (pos 5)", id="mla-mask-not-offset"),
    # the new latents concatenated before the cached ones
    pytest.param(MLA, "c_kv = torch.cat([cache[0], c_kv], dim=1)", "c_kv = torch.cat([c_kv, cache[0]], dim=1)",
                 "step 2 (pos 5)", id="mla-new-latents-first"),
]


@pytest.mark.parametrize(("base", "old", "new", "part"), SLIPS)
def test_the_divergence_is_the_slipped_line_in_the_call_it_first_shows(tmp_path, base, old, new, part):
    path, line = slipped(tmp_path, base, old, new)
    if "\n" in new.strip("\n"):  # a block moved: the line that goes wrong is the cat of the cached keys
        line += new.strip("\n").splitlines().index("            k_pe = torch.cat([cache[1], k_pe], dim=1)")
    result = grade(path)
    assert not result.passed
    d = result.divergence
    assert d is not None and d.line == line, (d, line)
    assert d.part == part
    assert wording.divergence_text(d).startswith(f"{part}: line {line}:")


def test_keys_returned_as_the_values_are_named_at_the_return(tmp_path):
    """The cache returned as (v, k): the trail sees no operation at the return, but the returned
    'v' is the reference's k, made right; the report says so at the return statement that gives it
    back in the wrong place, in the first call (issue 24: the line that is really wrong)."""
    path, _ = slipped(tmp_path, KV, "return self.o_proj(out), new_cache", "return self.o_proj(out), (new_cache[1], new_cache[0])")
    result = grade(path)
    d = result.divergence
    source = path.read_text(encoding="utf-8").splitlines()
    assert d is not None and d.reason == "output" and d.part == "step 1 (pos 0..4)"
    assert source[d.line - 1].strip() == "return self.o_proj(out), (new_cache[1], new_cache[0])"
    assert "cache v" in d.ref_name and "v_proj" in d.ref_code


def trails_of(path: Path, exercise_id: str, ci: int = 0, ni: int = 0) -> engine.Trails:
    ex = exercises.get(exercise_id)
    from attnprep.grader.kinds import kind_for

    engine.warm_up()
    t = engine.trails(path, ex, kind_for(ex, 0), ci, ni, frozenset(), engine.DEFAULT_TIMEOUT)
    assert t is not None
    return t


@pytest.mark.parametrize("exercise_id", ["kv_cache", "mla_decode"])
def test_the_reference_as_an_attempt_leaves_the_references_trail_step_for_step(tmp_path, exercise_id):
    """Traced as an attempt (in the child, driven by the kind's script) and as the reference (here,
    by trail_reference), the reference makes the same steps, call by call."""
    path = tmp_path / f"{exercise_id}.py"
    path.write_text(exercises.get(exercise_id).solution_path.read_text(encoding="utf-8"), encoding="utf-8")
    t = trails_of(path, exercise_id)
    assert len(t.attempt) == len(t.reference) > 0
    assert t.marks == t.ref_marks and len(t.marks) == 4  # prefill, decode, chunk, decode
    assert set(t.made) == set(t.ref_made) and len(t.made) == 4 * 3  # each call's output and two cache tensors
    assert t.made == t.ref_made
    for mine, ref in zip(t.attempt, t.reference):
        assert (mine.line, mine.func, mine.shape, mine.parents, mine.free) == (ref.line, ref.func, ref.shape, ref.parents, ref.free)
        if ref.values is not None:
            assert torch.allclose(mine.values, ref.values, rtol=1e-5, atol=1e-6)
    assert divergence.find(t.attempt, t.reference, {}, t.raised_at, (t.made, t.ref_made)) is None


@pytest.mark.parametrize("attempt", ["kv_cache/ok_einsum_grouped.py", "kv_cache/ok_hf_past_key_values.py",
                                     "mla_decode/ok_deepseek_official.py", "mla_decode/ok_matmul_heads_first.py"])
def test_a_correct_attempt_in_another_style_lines_up_with_the_reference_call_by_call(attempt):
    """A correct attempt in another style (einsum groups, a -1e9 additive mask, heads first) makes
    the same calls, and each call's output and cache are the reference's, value for value; its own
    intermediates may differ (a -1e9 fill is no -inf), and nothing is found."""
    exercise_id = attempt.split("/")[0]
    t = trails_of(CORPUS / attempt, exercise_id)
    assert [label for _, label in t.marks] == [label for _, label in t.ref_marks]
    assert set(t.made) == set(t.ref_made) and len(t.made) == 4 * 3
    for name, a in t.made.items():
        mine, ref = found.tensor_of(t.attempt[a]), found.tensor_of(t.reference[t.ref_made[name]])
        assert mine is not None and ref is not None and mine.shape == ref.shape, name
        assert torch.allclose(mine, ref, rtol=1e-4, atol=1e-5), name
    assert divergence.find(t.attempt, t.reference, {}, t.raised_at, (t.made, t.ref_made)) is None


def test_a_size_the_call_shares_with_another_axis_is_named_by_neither(tmp_path):
    """mla_decode's second call has six keys so far and a rope width of 6: the latents
    concatenated the wrong way round are (B, 6, kv_lora_rank), not (B, rope, kv_lora_rank)."""
    path, _ = slipped(tmp_path, MLA, "c_kv = torch.cat([cache[0], c_kv], dim=1)", "c_kv = torch.cat([c_kv, cache[0]], dim=1)")
    d = grade(path).divergence
    assert d is not None and d.part == "step 2 (pos 5)"
    assert d.named == "(B, 6, kv_lora_rank)" and d.ref_named == d.named
