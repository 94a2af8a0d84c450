"""The cached modules' named mistakes as edits of their reference solutions (``[grading] edits``) are
the mistakes the grader's functional steps made before them.

Until kv_cache's and mla_decode's mistakes became data, each was a knob of a functional step
(tests/cached_functional_variants.py, grader/cached_variants.py as it was), driven through a case's
script of calls. Here the edited reference, driven by ``CachedModule.variant`` (the cache each call
returns fed back, a replayed call given the same one, a ``given`` call the reference's cache laid out
as the variant's own), computes what the functional step computed: every call's output and every
cache entry, for every knob, on every case of every config, with both fills the judge tries, and for
the pairs the judge tries. Two knobs whose edits clash (two edits of one text) name nothing; such a
pair's functional form computed what one of its knobs alone computes, which the judge tries first,
so nothing is lost.

Not bit for bit: the edited references compute as the solutions do (``q @ k.T / sqrt(D)`` where the
functional step multiplied by ``1 / sqrt(D)``; mla_decode's scores as two einsums summed where the
step concatenated ``[q·W_UK; q_pe]`` against ``[c_kv; k_pe]``, its RoPE in float64 where the step's
was float32), so outputs agree to float32 rounding (rtol 1e-5, atol 1e-6), the tolerance the judge
compares far more loosely than.
"""

from __future__ import annotations

from types import SimpleNamespace

import cached_functional_variants as old
import pytest
import torch
from attnprep.grader import judge, variants
from attnprep.grader.edits import EditError, edited_source
from attnprep.grader.kinds import kind_for

from attnprep import exercises

CACHED = [e.id for e in exercises.registry().values() if e.contract.kind == "cached_module"]
EDITED = [i for i in CACHED if exercises.get(i).grading.get("edits")]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def kinds():
    made = {}

    def get(exercise_id: str):
        if exercise_id not in made:
            made[exercise_id] = kind_for(exercises.get(exercise_id), seed=0)
        return made[exercise_id]

    return get


def functional(kind, ci: int, knob, fill):
    """The knob's variant as the functional step computed it, driven through the script as before."""
    latent = any(p.name == "wkv_a" for p in kind.exercise.contract.params)  # MLA's absorbed form
    step = old.mla_step if latent else old.gqa_step
    return old.script(kind, step, ci, frozenset(), knob, fill)


def _outputs(run, case) -> dict | None:
    """Every output of the script, name -> tensor; None when a call raises (names nothing)."""
    try:
        with torch.no_grad():
            made = run(case)
            return {name: made[name] for name in made}
    except EditError:
        raise
    except Exception:  # noqa: BLE001 — a variant that does not run here names nothing, either way
        return None


def _same(got, want) -> bool:
    if got is None or want is None:
        return got is want
    if list(got) != list(want):
        return False
    for name in got:
        a, b = got[name].double(), want[name].double()
        if a.shape != b.shape or not torch.equal(a.isnan(), b.isnan()):
            return False
        if not torch.allclose(a.nan_to_num(), b.nan_to_num(), rtol=1e-5, atol=1e-6):
            return False
    return True


def _differences(kind, knob, fill, configs=None) -> list[tuple[int, str]]:
    """The (config, case) where the edited variant and the functional one disagree."""
    wrong = []
    for ci in configs if configs is not None else range(len(kind.configs)):
        edited, oracle = kind.variant(ci, frozenset(), knob, fill), functional(kind, ci, knob, fill)
        for case in kind.cases(ci):
            if not _same(_outputs(edited, case), _outputs(oracle, case)):
                wrong.append((ci, str(case.name)))
    return wrong


def judged_pairs(kind) -> list[tuple[str, str]]:
    """The pairs the judge tries, in its order (``Judge._pairs``)."""
    ex = kind.exercise
    stand_in = SimpleNamespace(kind=kind, ex=ex, _mistake=lambda k: ex.mistake(k.split(":")[0]))
    return judge.Judge._pairs(stand_in)


def test_the_cached_exercises_are_graded_by_edits():
    assert {"kv_cache", "mla_decode"} <= set(CACHED)
    assert set(EDITED) <= set(CACHED)


@pytest.mark.parametrize("exercise_id", EDITED)
def test_every_knob_is_edits_each_found_once(exercise_id, kinds):
    kind = kinds(exercise_id)
    reference = kind.exercise.solution_path.read_text(encoding="utf-8")
    edits = kind.grading.edits
    assert set(edits) == set(kind.knobs())
    for knob in kind.knobs():
        assert edits[knob], knob
        assert edited_source(reference, edits[knob]) != reference
        for edit in edits[knob]:
            assert reference.count(edit["old"]) == 1, (knob, edit["old"])
    assert reference.count(kind.grading.fill) == 1


@pytest.mark.parametrize("exercise_id", CACHED)
def test_without_a_knob_the_variant_is_the_functional_step(exercise_id, kinds):
    kind = kinds(exercise_id)
    for fill in variants.FILLS:
        assert _differences(kind, "", fill) == [], fill


@pytest.mark.parametrize(("exercise_id", "knob"), [(i, k) for i in CACHED for k in exercises.get(i).grading["knobs"]])
def test_each_edit_is_the_functional_mistake_with_both_fills(exercise_id, knob, kinds):
    kind = kinds(exercise_id)
    for fill in variants.FILLS:
        assert _differences(kind, knob, fill) == [], fill


def _one_knob_wins(kind, pair, cases) -> bool:
    """The functional form of ``pair`` computed what one of its knobs alone computes, on every case
    of the first config (its if-chains let one of two slips of the same line win)."""
    both = [_outputs(functional(kind, 0, pair, float("-inf")), c) for c in cases]
    return any(all(_same(b, _outputs(functional(kind, 0, k, float("-inf")), c)) for b, c in zip(both, cases))
               for k in pair)


def _pair_outcome(kind, pair, cases) -> tuple[bool, str | None]:
    """(whether the pair's edits clash, what is wrong with it or None): a pair whose edits clash, or
    compose into what the functional form could not say, is fine when its functional form computed
    what one of its knobs alone computes (the judge tries that knob first)."""
    try:
        kind.edited.source(pair)
    except EditError:
        return True, None if _one_knob_wins(kind, pair, cases) else "clash"
    if _differences(kind, pair, float("-inf"), configs=[0]) and not _one_knob_wins(kind, pair, cases):
        return False, "differs"
    return False, None


def _sampled_pairs(kind) -> list[tuple[str, str]]:
    """The pairs test_the_pairs_the_judge_tries_are_both_edits reads: its own mistakes' pairs first,
    then every fifth, each in both orders."""
    pairs = judged_pairs(kind)
    sample = pairs[:40] + pairs[40::5]
    return [p for a, b in sample for p in ((a, b), (b, a))]


def _outcomes(exercise_id: str, kinds, once) -> dict[tuple[str, str], tuple[bool, str | None]]:
    """:func:`_pair_outcome` of every pair the two pair tests read (the sample in both orders, and
    kv_cache's every judged pair: half of kv_cache's sample is among them), worked out once per test
    run (``once``, tests/conftest.py) for both tests, whichever worker asks first."""
    def work():
        kind = kinds(exercise_id)
        wanted = _sampled_pairs(kind) + (judged_pairs(kind) if exercise_id == "kv_cache" else [])
        cases = kind.cases(0)
        return {pair: _pair_outcome(kind, pair, cases) for pair in dict.fromkeys(wanted)}

    return once(f"cached edits: pair outcomes of {exercise_id}", work)


def _pair_problems(outcomes: dict, pairs) -> tuple[list, int, int]:
    """(the pairs whose edits disagree with the functional pair, how many composed, how many clashed)."""
    wrong, composed, clashed = [], 0, 0
    for pair in pairs:
        clash, problem = outcomes[pair]
        clashed += clash
        composed += not clash
        if problem is not None:
            wrong.append((problem, pair))
    return wrong, composed, clashed


@pytest.mark.parametrize("exercise_id", EDITED)
def test_the_pairs_the_judge_tries_are_both_edits(exercise_id, kinds, once):
    """A sample of the pairs the judge tries (its own mistakes' pairs first, then every fifth; both
    orders), on the first config: each computes the functional pair; or the functional pair computed
    what one of its knobs alone computes (two slips of one line: one of them won), and its edits clash
    or compose (two slips of the mask, made both)."""
    kind = kinds(exercise_id)
    pairs = judged_pairs(kind)
    assert len(pairs) == min(kind.pair_limit, len(pairs))
    wrong, composed, clashed = _pair_problems(_outcomes(exercise_id, kinds, once), _sampled_pairs(kind))
    assert wrong == []
    assert composed > 3 * clashed


@pytest.mark.parametrize("exercise_id", EDITED)
def test_two_scale_mistakes_clash_and_name_nothing(exercise_id, kinds):
    kind = kinds(exercise_id)
    run = kind.variant(0, frozenset(), ("missing_scale", "scale_inverted"), float("-inf"))
    with pytest.raises(EditError):
        run(kind.cases(0)[0])["step 1 out (pos 0..4)"]


@pytest.mark.skipif("kv_cache" not in EDITED, reason="kv_cache's mistakes are not edits yet")
def test_every_pair_of_kv_caches_knobs_is_the_functional_pair_or_one_knob(kinds, once):
    """kv_cache tries every pair (pair_limit covers them): all of them, in the judge's order."""
    kind = kinds("kv_cache")
    wrong, _, _ = _pair_problems(_outcomes("kv_cache", kinds, once), judged_pairs(kind))
    assert wrong == []
