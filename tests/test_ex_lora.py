"""The lora exercise and its kind (adapter_module): the reference against the formula written apart,
the three capabilities the kind declares as data (a method graded by its output, the frozen roles
graded by which parameters receive gradients, the attempt's own initialisation read before the
grader's weights are loaded), PEFT's and loralib's layouts mapped, the mistakes as edits of the
reference, the two-mistake attempts of tests/corpus/lora/pairs/ and the failures that name nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnprep import exercises
from attnprep.grader.kinds import kind_for
from attnprep.grader.result import Verdict
from attnprep.solutions.lora import LoRALinear

from per_exercise import linear

# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "adapter_module",
    "objects": ("LoRALinear",),
    "constructor": "in_features, out_features, r, alpha",
    "params": lambda a: {**linear("base", a["in_features"], a["out_features"]),
                         **linear("lora_A", a["in_features"], a["r"], bias=False), **linear("lora_B", a["r"], a["out_features"], bias=False)},
}

EX = exercises.get("lora")
CORPUS = Path(__file__).parent / "corpus" / "lora"
PAIRS = sorted((CORPUS / "pairs").glob("*.py"))


def _loaded(module: LoRALinear, seed: int = 0) -> LoRALinear:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def test_reference_is_the_formula_and_its_merge_equals_forward():
    m = _loaded(LoRALinear(6, 6, 2, 5.0).double())
    W, b, A, B = m.base.weight, m.base.bias, m.lora_A.weight, m.lora_B.weight
    for shape in [(6,), (5, 6), (2, 3, 4, 6)]:
        x = torch.randn(shape, dtype=torch.float64)
        want = x @ W.T + b + (x @ A.T @ B.T) * (5.0 / 2)
        torch.testing.assert_close(m(x), want)
        merged = m.merged()
        assert type(merged) is torch.nn.Linear
        torch.testing.assert_close(merged(x), want)


def test_the_reference_starts_as_its_base_and_trains_only_the_adapters():
    m = LoRALinear(8, 8, 2, 4.0)
    assert torch.equal(m.lora_B.weight, torch.zeros(8, 2)) and m.lora_A.weight.abs().sum() > 0
    x = torch.randn(3, 8)
    torch.testing.assert_close(m(x), m.base(x))
    m(x).sum().backward()
    assert {n for n, p in m.named_parameters() if p.grad is not None} == {"lora_A.weight", "lora_B.weight"}
    assert m.lora_B.weight.grad.abs().sum() > 0


def test_capabilities_are_declared_data_of_the_exercise():
    kind = kind_for(EX, seed=0)
    assert type(kind).__module__.endswith("adapter_module")
    assert kind.methods == ["merged"] and kind.method_types == {"merged": "Linear"}
    assert kind.frozen["roles"] == ["base"] and kind.init["zero"] == ["lora_B"]
    # graded as SPEC §11 says: in == out (a transposed merge fits) and alpha != r (every scale differs)
    assert all(c["in_features"] == c["out_features"] and c["alpha"] != c["r"] for c in kind.configs)


def test_the_method_is_an_output_of_float32_cases_only():
    kind = kind_for(EX, seed=0)
    cases = kind.cases(0)
    for case in cases:
        shapes = kind.expected_shapes(0, case)
        assert ("merged" in shapes) == (case.dtype == "float32"), case.name
    with torch.no_grad():
        out = kind.reference(0)(cases[0])
    torch.testing.assert_close(out["merged"], out["out"])


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_every_knob_is_an_edit_that_applies_once_and_changes_an_output(knob):
    kind = kind_for(EX, seed=0)
    source = EX.solution_path.read_text(encoding="utf-8")
    for edit in EX.grading["edits"][knob]:
        assert source.count(edit["old"]) == 1, edit
    case = kind.cases(0)[0]
    with torch.no_grad():
        want = kind.reference(0)(case)
        got = kind.variant(0, frozenset(), knob, 0.0)(case)
    assert max(float((got[n] - want[n]).abs().max()) for n in want) > 1e-3, knob
    if knob.startswith("lora_merge"):  # forward untouched, only the merged layer differs
        torch.testing.assert_close(got["out"], want["out"])


def test_peft_names_map_by_alias_and_loralib_bare_matrices_beside_weight(graded):
    peft = graded(CORPUS / "ok_peft_lora_layer.py")
    assert peft.verdict is Verdict.PASSED
    assert peft.mapping == {"base": "base_layer", "lora_A": "lora_A.default", "lora_B": "lora_B.default"}
    loralib = graded(CORPUS / "ok_loralib_linear.py")
    assert loralib.verdict is Verdict.PASSED
    assert loralib.mapping == {"base": "", "lora_A": "lora_A", "lora_B": "lora_B"}


def _check(result, check_id):
    (check,) = [c for c in result.checks if c.id == check_id]
    return check


def test_a_base_not_frozen_fails_the_frozen_check_with_its_parameters(graded):
    result = graded(CORPUS / "lora_base_not_frozen.py")
    check = _check(result, "frozen")
    assert check.passed is False and check.message.params["names"] == "base.bias, base.weight"
    assert _check(result, "output").passed and _check(result, "gradients").passed  # the adapters' gradients are right


def test_a_trainable_bias_alone_fails_and_names_nothing(graded):
    result = graded(CORPUS / "unnamed" / "base_bias_trainable.py")
    assert result.verdict is Verdict.WRONG_OUTPUT and not result.diagnoses
    assert _check(result, "frozen").message.params["names"] == "base.bias"


def test_initialisation_is_read_before_the_grader_loads_its_weights(graded):
    b_random = graded(CORPUS / "lora_b_not_zero.py")
    assert _check(b_random, "initialisation").message.key == "adapter_module.init_not_zero"
    assert _check(b_random, "output").passed  # the seeded weights hide it from the outputs
    both_zero = graded(CORPUS / "lora_a_zero.py")
    assert _check(both_zero, "initialisation").message.key == "adapter_module.init_zero"
    assert [d.id for d in both_zero.diagnoses] == ["lora_b_not_zero"]


def test_a_merged_module_of_another_class_fails_the_method_check(graded):
    result = graded(CORPUS / "unnamed" / "merged_not_linear.py")
    assert result.verdict is Verdict.WRONG_OUTPUT and not result.diagnoses
    check = _check(result, "method")
    assert check.passed is False and check.message.params["type"] == "LoRALinear"
    assert _check(result, "output").passed


def test_a_missing_method_is_a_contract_failure(tmp_path, graded):
    source = (CORPUS / "lora_base_not_frozen.py").read_text(encoding="utf-8")
    path = tmp_path / "no_merge.py"
    path.write_text(source.replace("def merged(self)", "def merge(self)"), encoding="utf-8")
    result = graded(path)
    assert result.verdict is Verdict.CONTRACT
    assert _check(result, "contract").message.key == "adapter_module.no_method"


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.stem)
def test_two_mistakes_at_once_are_both_named(path, graded):
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    expect = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# expect:"))
    names = next(l.split(":", 1)[1].strip() for l in lines if l.startswith("# diagnosis:")).split(" + ")
    result = graded(path)
    assert result.verdict.value == expect
    assert sorted(d.id for d in result.diagnoses) == sorted(names)


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
# a linear layer, two adapters and a merge: its named mistakes (tests/corpus/lora) are the rest; its
# constants add biases (contract failures), so the killed sample starts elsewhere
MUTATION = {"min": 10, "sample": 3, "families": {"constant", "layer_drop", "param_drop", "matmul_swap", "arith"},
            "focus": ("layer_drop", "matmul_swap", "param_drop")}
