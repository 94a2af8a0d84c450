"""Every exercise whose mistakes are edits of its reference (``[grading] edits``), held to what the edits
promise, from the registry alone: a new exercise's mistakes are tested here without a line of its own.

Each knob is a list of ``{old, new}`` replacements of ``solutions/<id>.py``, each ``old`` found once; the
edited reference still parses, and computes something else than the reference on some case of some
config. Where the exercise names its mask fill (``[grading] fill``) the reference writes it once per
mask site; where it splits a merged fill (``mask_split``), the variant with a fill per mask is written
as declared. What an exercise adds beyond these (a knob that must change one object only, in every
config …) stays in its tests/test_ex_<id>.py.
"""

from __future__ import annotations

import ast

import pytest
import torch

from attnprep import exercises
from attnprep.grader import variants
from attnprep.grader.edits import edited_source
from attnprep.grader.kinds import kind_for
from per_exercise import same, variant_outputs

EDITED = [ex.id for ex in exercises.registry().values() if ex.grading.get("edits")]
KNOBS = [(ex_id, knob) for ex_id in EDITED for knob in exercises.get(ex_id).grading["knobs"]]
SPLIT = [ex_id for ex_id in EDITED if exercises.get(ex_id).grading.get("mask_split")]

_KINDS: dict[str, object] = {}


def _kind(exercise_id: str):
    if exercise_id not in _KINDS:
        _KINDS[exercise_id] = kind_for(exercises.get(exercise_id), seed=0)
    return _KINDS[exercise_id]


def test_most_exercises_are_graded_by_edits():
    kinds = {"attention_module", "rope_functions", "norm_modules", "attention_functions"}
    of_kinds = [ex.id for ex in exercises.registry().values() if ex.contract.kind in kinds]
    assert len(EDITED) >= 19 and len(of_kinds) >= 8 and set(of_kinds) <= set(EDITED)
    assert len(KNOBS) >= 400 and SPLIT


@pytest.mark.parametrize("exercise_id", EDITED)
def test_every_knob_is_edits_each_found_once(exercise_id):
    ex = exercises.get(exercise_id)
    reference = ex.solution_path.read_text(encoding="utf-8")
    edits = ex.grading["edits"]
    assert set(edits) == set(ex.grading["knobs"])
    for knob, made in edits.items():
        assert made, knob
        for edit in made:
            assert reference.count(edit["old"]) == 1, (knob, edit["old"])
        edited = edited_source(reference, made)
        assert edited != reference, knob
        ast.parse(edited, filename=f"{ex.solution_path.name} with {knob}")
    fill = ex.grading.get("fill")
    if fill:  # written where the reference fills; once per mask site where it fills them one by one
        sites = ex.grading.get("fill_sites")
        assert reference.count(fill) == len(sites) if sites else reference.count(fill) >= 1, fill


@pytest.mark.parametrize(("exercise_id", "knob"), KNOBS, ids=lambda v: str(v))
def test_every_knob_changes_an_output_of_some_case(exercise_id, knob):
    """Beyond the case's tolerance, on some case of some config (the first that shows it ends the search)."""
    kind = _kind(exercise_id)
    for ci in range(len(kind.configs)):
        reference = kind.reference(ci)
        try:
            for case, got in zip(kind.cases(ci), variant_outputs(kind, ci, knob)):
                with torch.no_grad():
                    want = reference(case)
                if any(not same(case, got[name], want[name]) for name in want):
                    return
        except (RuntimeError, IndexError):  # a tensor op of the variant raises where the reference runs
            return
    pytest.fail(f"{knob} computes what the reference computes on every case of {exercise_id}")


@pytest.mark.parametrize("exercise_id", SPLIT)
def test_a_fill_per_mask_is_written_where_the_reference_fills_both(exercise_id):
    """With a variants.MaskFills the reference's one fill becomes one fill per mask (the split's edits):
    rows that keep a key compute what the reference does; a knob that merges the masks (or fills
    neither) keeps one fill, the padding's, and never the causal mask's own; and a row every key of
    which is blocked, NaN with -inf, is a number once the masks take different fills."""
    kind = _kind(exercise_id)
    grading = exercises.get(exercise_id).grading
    split = variants.MaskFills(float("-inf"), -1e9)
    source = kind.edited.source((), split)
    assert all(edit["new"] in source for edit in grading["mask_split"]) and grading["fill"] not in source
    merged = [k for k in grading["knobs"] if "mask_fills" not in kind.edited.source((k,), split)]
    assert merged  # the knobs that take away the text the split edits
    for knob in merged:
        assert "-1000000000.0" not in kind.edited.source((knob,), split), knob
    ci = 0
    cases = kind.cases(ci)
    for case, ref, per_mask in zip(cases, variant_outputs(kind, ci, ""), variant_outputs(kind, ci, "", split)):
        for name in ref:
            keys = ~ref[name].isnan()
            assert same(case, per_mask[name][keys], ref[name][keys]), (str(case.name), name)
    for knob in grading["knobs"]:
        if knob in merged:
            continue
        for inf, per_mask in zip(variant_outputs(kind, ci, knob), variant_outputs(kind, ci, knob, split)):
            if any(inf[n].isnan().any() and not per_mask[n].isnan().any() for n in inf):
                return
    pytest.fail(f"no knob of {exercise_id} leaves a row with every key blocked that the split fills")
