"""Each entry of an exercise's ``[grading] configs`` is parsed once into its kind's typed, frozen
Config (grader/kinds/base.py): the sizes the kind reads are its fields, a module kind takes the
contract's constructor arguments by their names and annotations, and anything else is a
GradingError naming the entry, instead of a typo silently changing how the exercise is graded."""

from __future__ import annotations

import dataclasses

import pytest

from attnprep import exercises
from attnprep.grader.kinds import kind_for
from attnprep.grader.kinds.base import Config, GradingError

ALL_IDS = list(exercises.registry())


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_every_shipped_config_is_typed_and_reads_as_written(exercise_id):
    ex = exercises.get(exercise_id)
    kind = kind_for(ex, 0)
    written = ex.grading["configs"]
    assert all(isinstance(c, kind.Config) and isinstance(c, Config) for c in kind.configs)
    assert [dict(c) for c in kind.configs] == [dict(c) for c in written]
    assert [list(c) for c in kind.configs] == [list(c) for c in written]  # the TOML's order: messages say it so
    for config in kind.configs:
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.given = {}
        for f in dataclasses.fields(config):  # a declared size is the field's value too
            if f.name in config:
                assert getattr(config, f.name) == config[f.name]


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_a_misspelt_or_mistyped_key_of_a_config_is_named_with_its_entry(exercise_id):
    ex = exercises.get(exercise_id)
    configs = [dict(c) for c in ex.grading["configs"]]
    key = next(iter(configs[-1]))
    last = len(configs) - 1

    def parsed(entry: dict):
        grading = {**ex.grading, "configs": configs[:-1] + [entry]}
        return kind_for(ex._replace(grading=grading), 0)

    misspelt = {(f"{k}_" if k == key else k): v for k, v in configs[-1].items()}
    with pytest.raises(GradingError) as raised:
        parsed(misspelt)
    error = raised.value
    assert (error.exercise_id, error.where, error.unknown) == (exercise_id, f"configs[{last}]", [f"{key}_"])
    assert f"configs[{last}]" in str(error) and f"{key}_" in str(error)

    with pytest.raises(GradingError) as raised:
        parsed({**configs[-1], key: "sixteen"})
    assert raised.value.wrong == [key] and raised.value.unknown == []


def test_what_a_config_needs_comes_from_the_kind_and_the_contract():
    """A module's constructor argument without a default is needed, one with a default is not; a
    functions kind's declared sizes are needed, its optional ones are not; an int where a float is
    annotated is fine, a bool where an int is annotated is not."""
    gqa = exercises.get("gqa")

    def gqa_config(**entry):
        return kind_for(gqa._replace(grading={**gqa.grading, "configs": [entry]}), 0).configs[0]

    assert dict(gqa_config(d_model=16, num_heads=4, num_kv_heads=2)) == {"d_model": 16, "num_heads": 4, "num_kv_heads": 2}
    assert gqa_config(d_model=16, num_heads=4, num_kv_heads=2, dropout=0)["dropout"] == 0
    with pytest.raises(GradingError) as raised:
        gqa_config(d_model=16, num_heads=4)
    assert raised.value.missing == ["num_kv_heads"]
    with pytest.raises(GradingError) as raised:
        gqa_config(d_model=16, num_heads=True, num_kv_heads=2)
    assert raised.value.wrong == ["num_heads"]

    causal = exercises.get("causal")
    with pytest.raises(GradingError) as raised:
        kind_for(causal._replace(grading={**causal.grading, "configs": [{"heads": 2}]}), 0)
    assert raised.value.missing == ["dim"]


def test_a_probe_config_is_checked_like_a_graded_one():
    norms = exercises.get("norms")
    grading = {**norms.grading, "probe_configs": [{"dim": 7, "epsilon": 2e-3}]}
    with pytest.raises(GradingError) as raised:
        kind_for(norms._replace(grading=grading), 0)
    assert (raised.value.where, raised.value.unknown) == ("probe_configs[0]", ["epsilon"])
