"""The norms exercise: its reference against torch's own norms, the low-precision cases it is graded
on, the built-ins it forbids, the parameter mapping and the eps convention's evidence.

solutions/norms.py is checked against nn.RMSNorm, F.rms_norm, nn.LayerNorm and F.layer_norm in
float64 on inputs of every rank; the graded float16 case must be one where squaring without the
float32 upcast overflows, so that a missing upcast cannot pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attnprep import exercises, texts
from attnprep.grader import grade
from attnprep.grader.kinds import kind_for
from attnprep.grader.observe import Observer, forbidden_functions
from attnprep.grader.result import Verdict
from attnprep.solutions.norms import LayerNorm, RMSNorm
from per_exercise import same, variant_outputs


# The contract as SPEC writes it, by hand (not read from exercise.toml): tests/test_registry.py holds
# the exercise's data, stub and reference to it ("params": the parameter shapes for a config).
CONTRACT = {
    "kind": "norm_modules",
    "objects": ("RMSNorm", "LayerNorm"),
    "constructors": {"RMSNorm": "dim, eps=1e-6", "LayerNorm": "dim, eps=1e-5"},  # parameters: the classes' own, see below
}

EX = exercises.get("norms")
F64 = torch.float64
SHAPES = [(16,), (5, 16), (2, 7, 16), (2, 3, 4, 16)]


def _seeded(module: nn.Module, seed: int = 0) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.5 + (1.0 if name == "weight" else 0.0))
    return module


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}-d")
@pytest.mark.parametrize("eps", [1e-6, 1e-2])
def test_rmsnorm_matches_torch(shape, eps):
    mine = _seeded(RMSNorm(16, eps).double())
    torchs = nn.RMSNorm(16, eps=eps).double()
    torchs.load_state_dict(mine.state_dict())
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1), dtype=F64) * 0.1
    out = mine(x)
    assert out.shape == x.shape and out.dtype == F64
    torch.testing.assert_close(out, torchs(x), atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(out, F.rms_norm(x, (16,), mine.weight, eps), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{len(s)}-d")
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layernorm_matches_torch(shape, eps):
    mine = _seeded(LayerNorm(16, eps).double())
    torchs = nn.LayerNorm(16, eps=eps).double()
    torchs.load_state_dict(mine.state_dict())
    x = torch.randn(shape, generator=torch.Generator().manual_seed(2), dtype=F64) * 0.1 + 3.0
    out = mine(x)
    assert out.shape == x.shape and out.dtype == F64
    torch.testing.assert_close(out, torchs(x), atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(out, F.layer_norm(x, (16,), mine.weight, mine.bias, eps), atol=1e-10, rtol=1e-10)


def test_defaults_and_parameters_are_the_contracts():
    rms, ln = RMSNorm(6), LayerNorm(6)
    assert rms.eps == 1e-6 and ln.eps == 1e-5
    assert [(n, tuple(p.shape)) for n, p in rms.named_parameters()] == [("weight", (6,))]
    assert [(n, tuple(p.shape)) for n, p in ln.named_parameters()] == [("weight", (6,)), ("bias", (6,))]
    assert torch.equal(rms.weight, torch.ones(6)) and torch.equal(ln.bias, torch.zeros(6))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_modules_stay_in_their_dtype_within_a_few_ulps(dtype):
    scale = 400.0 if dtype is torch.float16 else 1.0
    x = (torch.randn(4, 7, 16, generator=torch.Generator().manual_seed(3)) * scale).to(dtype)
    eps_dtype = torch.finfo(dtype).eps
    for cls in (RMSNorm, LayerNorm):
        module = _seeded(cls(16)).to(dtype)
        out = module(x)
        assert out.dtype == dtype and torch.isfinite(out).all()
        exact = _seeded(cls(16)).double()
        with torch.no_grad():  # the module's own rounded parameters, computed exactly
            for p, q in zip(exact.parameters(), module.parameters()):
                p.copy_(q.double())
        want = exact(x.double())
        assert ((out.double() - want).abs() <= 4 * eps_dtype * (1 + want.abs())).all(), cls.__name__


def test_the_float16_case_overflows_without_the_upcast():
    kind = kind_for(EX, seed=0)
    for ci in range(len(kind.configs)):
        (case,) = [c for c in kind.cases(ci) if c.dtype == "float16"]
        x = case.inputs["x"]
        assert x.dtype == torch.float16 and case.tolerance == (4 * 2**-10, 4 * 2**-10)
        # x² is inf somewhere in nearly every row, and the mean of squares is inf in float16
        assert (x.float().abs() > 256).any(-1).float().mean() > 0.8
        assert torch.isinf(x.pow(2).mean(-1)).float().mean() > 0.8
        with torch.no_grad():
            no_upcast = kind.variant(ci, frozenset(), "norm_no_upcast", 0.0)(case)["RMSNorm"]
        assert (no_upcast == 0).float().mean() > 0.5  # x * rsqrt(inf)


def test_graded_cases_cover_the_contract():
    kind = kind_for(EX, seed=0)
    assert any("eps" not in c for c in kind.configs) and any("eps" in c for c in kind.configs)
    assert any(c["dim"] % 2 for c in kind.configs)
    for ci in range(len(kind.configs)):
        cases = kind.cases(ci)
        ranks = {c.inputs["x"].dim() for c in cases}
        assert {2, 3, 4} <= ranks
        assert {c.dtype for c in cases} == {"float32", "bfloat16", "float16"}
        for case in cases:
            assert case.inputs["x"].dtype == getattr(torch, case.dtype)
            assert set(kind.expected_shapes(ci, case)) == {"RMSNorm", "LayerNorm"}
        tiny = [c for c in cases if c.inputs["x"].abs().max() < 0.01]
        assert tiny and tiny[0].inputs["x"].pow(2).mean() < 1e-5  # eps is not negligible there
    weights = kind.role_weights(0)
    assert set(weights) == {"RMSNorm", "LayerNorm"} and set(weights["LayerNorm"]) == {"weight", "bias"}
    for roles in weights.values():  # non-trivial values, so a forgotten weight or bias shows
        assert all((v - (1.0 if r == "weight" else 0.0)).abs().min() > 1e-3 for r, v in roles.items())


def test_eps_convention_is_visible_only_where_eps_is_the_default():
    kind = kind_for(EX, seed=0)
    for ci, c in enumerate(kind.configs):
        variant = kind.variant(ci, frozenset(), "norm_eps_convention:rms=1e-5", 0.0)
        reference = kind.reference(ci)
        differs = any(not torch.allclose(variant(case)["RMSNorm"].double(), reference(case)["RMSNorm"].double(),
                                         rtol=1e-4, atol=1e-5) for case in kind.cases(ci) if case.dtype == "float32")
        assert differs == ("eps" not in c)


def test_forbidden_builtins_are_recognised_by_the_function_that_runs():
    forbidden = forbidden_functions(EX.grading["forbidden_functions"])
    x = torch.randn(2, 3, 8)
    calls = {
        "nn.LayerNorm": lambda: nn.LayerNorm(8)(x),
        "nn.RMSNorm": lambda: nn.RMSNorm(8)(x),
        "F.layer_norm": lambda: F.layer_norm(x, (8,)),
        "torch.layer_norm": lambda: torch.layer_norm(x, (8,)),
        "torch.native_layer_norm": lambda: torch.native_layer_norm(x, (8,), None, None, 1e-5),
        "torch.ops.aten.native_layer_norm": lambda: torch.ops.aten.native_layer_norm.default(x, [8], None, None, 1e-5),
        "nn.GroupNorm": lambda: nn.GroupNorm(1, 3)(x),
    }
    for name, call in calls.items():
        observer = Observer(7, 7, forbidden=forbidden)
        with observer:
            call()
        assert observer.obs.builtins, name
    clean = Observer(7, 7, forbidden=forbidden)
    with clean:  # hand-written: mean, var, rsqrt
        x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + 1e-5)
    assert clean.obs.builtins == set()


def test_an_aten_layer_norm_is_a_builtin(tmp_path):
    attempt = tmp_path / "norms.py"
    attempt.write_text(
        "# attnprep: norms\nimport torch\nimport torch.nn as nn\n\n"
        "class RMSNorm(nn.Module):\n"
        "    def __init__(self, dim, eps=1e-6):\n        super().__init__()\n        self.eps = eps\n"
        "        self.weight = nn.Parameter(torch.ones(dim))\n\n"
        "    def forward(self, x):\n        h = x.float()\n"
        "        return self.weight * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)\n\n"
        "class LayerNorm(nn.Module):\n"
        "    def __init__(self, dim, eps=1e-5):\n        super().__init__()\n        self.eps = eps\n"
        "        self.weight = nn.Parameter(torch.ones(dim))\n        self.bias = nn.Parameter(torch.zeros(dim))\n\n"
        "    def forward(self, x):\n"
        "        return torch.ops.aten.native_layer_norm(x, [x.shape[-1]], self.weight, self.bias, self.eps)[0]\n",
        encoding="utf-8",
    )
    result = grade(attempt)
    assert result.verdict is Verdict.BUILTIN
    assert "torch.ops.aten.native_layer_norm" in texts.render(result.checks[0].message)


def test_a_class_without_its_parameters_is_a_contract_failure(tmp_path):
    attempt = tmp_path / "norms.py"
    attempt.write_text(
        "# attnprep: norms\nimport torch\nimport torch.nn as nn\n\n"
        "class RMSNorm(nn.Module):\n"
        "    def __init__(self, dim, eps=1e-6):\n        super().__init__()\n        self.eps = eps\n\n"
        "    def forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)\n\n"
        "class LayerNorm(RMSNorm):\n    pass\n",
        encoding="utf-8",
    )
    result = grade(attempt)
    assert result.verdict is Verdict.CONTRACT
    words = texts.render(result.checks[0].message)
    assert "RMSNorm has no parameter of shape (16,)" in words and "weight" in words


def test_the_eps_convention_says_both_values(graded):
    result = graded(_corpus("norm_eps_convention"))
    (diagnosis,) = result.diagnoses
    assert diagnosis.id == "norm_eps_convention"
    words = " ".join(texts.render(m) for m in diagnosis.evidence)
    assert "1e-5" in words and "1e-6" in words


def test_parameters_with_other_names_are_mapped_and_said_so(graded):
    result = graded(_corpus("ok_unnamed_params_by_order"))
    assert result.passed
    assert result.mapping == {"RMSNorm.weight": "RMSNorm.p", "LayerNorm.weight": "LayerNorm.p", "LayerNorm.bias": "LayerNorm.q"}
    assert {n.kind for n in result.mapping_notes} == {"by_shape"}


def test_gains_kept_broadcast_ready_are_the_contracts_vectors(tmp_path):
    """A gain kept as ``nn.Parameter(torch.ones(1, 1, dim))`` is the ``(dim,)`` weight (okfit18: a
    correct pair so written was a contract failure): mapped, loaded in its own shape, its gradient
    graded as the vector's; one with two dims beyond 1 is no gain."""
    attempt = tmp_path / "norms.py"
    attempt.write_text(
        "# attnprep: norms\nimport torch\nimport torch.nn as nn\n\n"
        "class RMSNorm(nn.Module):\n"
        "    def __init__(self, dim, eps=1e-6):\n        super().__init__()\n        self.eps = eps\n"
        "        self.weight = nn.Parameter(torch.ones(1, 1, dim))\n\n"
        "    def forward(self, x):\n        h = x.float()\n"
        "        y = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)\n"
        "        return y * self.weight.view(*([1] * (x.dim() - 1)), -1)\n\n"
        "class LayerNorm(nn.Module):\n"
        "    def __init__(self, dim, eps=1e-5):\n        super().__init__()\n        self.eps = eps\n"
        "        self.weight = nn.Parameter(torch.ones(dim))\n        self.bias = nn.Parameter(torch.zeros(1, dim))\n\n"
        "    def forward(self, x):\n        h = x.float()\n        h = h - h.mean(-1, keepdim=True)\n"
        "        y = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)\n"
        "        return y * self.weight + self.bias.view(-1)\n",
        encoding="utf-8",
    )
    result = grade(attempt)
    assert result.passed, result
    assert result.mapping == {}  # by their names
    text = attempt.read_text(encoding="utf-8").replace("torch.ones(1, 1, dim)", "torch.ones(2, 1, dim)")
    attempt.write_text(text.replace("self.weight.view(*([1] * (x.dim() - 1)), -1)", "self.weight[0, 0]"), encoding="utf-8")
    assert grade(attempt).verdict is Verdict.CONTRACT


def _corpus(name: str):
    from pathlib import Path

    return Path(__file__).parent / "corpus" / "norms" / f"{name}.py"


def _variant_outputs(knob, ci: int = 0, case_index: int = 1):
    """A knob's outputs on config ``ci``'s float32 ``(5, dim)`` case, the input and the seeded weights."""
    kind = kind_for(EX, seed=0)
    case = kind.cases(ci)[case_index]
    with torch.no_grad():
        got = kind.variant(ci, frozenset(), knob, 0.0)(case)
    return got, case.inputs["x"].double(), {n: {r: v.double() for r, v in w.items()} for n, w in kind.role_weights(ci).items()}


def test_the_variants_compute_the_textbook_formulas():
    """The edited references compute the formulas their mistakes are named after (config 0: dim 16,
    the default eps), and a knob restricted to one class leaves the other one right."""
    def rms(x, w, eps=1e-6, ms=None):
        ms = x.pow(2).mean(-1, keepdim=True) if ms is None else ms
        return w * x / torch.sqrt(ms + eps)

    def ln(x, w, b, eps=1e-5, var=None):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False) if var is None else var
        return w * (x - mean) / torch.sqrt(var + eps) + b

    close = lambda got, want: torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)  # noqa: E731
    got, x, w = _variant_outputs("")
    R, L = w["RMSNorm"], w["LayerNorm"]
    close(got["RMSNorm"], rms(x, R["weight"]))
    close(got["LayerNorm"], ln(x, L["weight"], L["bias"]))
    got, *_ = _variant_outputs("norm_unbiased_variance")
    close(got["LayerNorm"], ln(x, L["weight"], L["bias"], var=x.var(-1, keepdim=True)))
    close(got["RMSNorm"], rms(x, R["weight"]))
    got, *_ = _variant_outputs("layernorm_unbiased_std_eps")
    close(got["LayerNorm"], L["weight"] * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-5) + L["bias"])
    got, *_ = _variant_outputs("rmsnorm_one_plus_weight")
    close(got["RMSNorm"], rms(x, 1 + R["weight"]))
    got, *_ = _variant_outputs("norm_eps_outside_sqrt:ln")
    close(got["RMSNorm"], rms(x, R["weight"]))
    ms = x.pow(2).mean(-1, keepdim=True)
    close(got["LayerNorm"], L["weight"] * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, unbiased=False) + 1e-5) + L["bias"])
    got, *_ = _variant_outputs("rmsnorm_subtracts_mean")
    centred = x - x.mean(-1, keepdim=True)
    close(got["RMSNorm"], rms(centred, R["weight"]))
    got, *_ = _variant_outputs("rmsnorm_subtracts_mean:numerator")
    close(got["RMSNorm"], rms(centred, R["weight"], ms=ms))
    got, *_ = _variant_outputs("layernorm_no_mean:mean_square")
    close(got["LayerNorm"], L["weight"] * x / torch.sqrt(ms + 1e-5) + L["bias"])
    # the eps convention: config 0 leaves eps out (the default is graded), config 1 passes 1e-3
    got, *_ = _variant_outputs("norm_eps_convention:swapped", case_index=3)
    tiny = kind_for(EX, seed=0).cases(0)[3].inputs["x"].double()
    close(got["RMSNorm"], rms(tiny, R["weight"], eps=1e-5))
    close(got["LayerNorm"], ln(tiny, L["weight"], L["bias"], eps=1e-6))
    got, x1, w1 = _variant_outputs("norm_eps_ignored", ci=1, case_index=3)
    close(got["RMSNorm"], rms(x1, w1["RMSNorm"]["weight"], eps=1e-6))
    got, *_ = _variant_outputs("norm_eps_convention:rms=1e-5", ci=1, case_index=3)
    close(got["RMSNorm"], rms(x1, w1["RMSNorm"]["weight"], eps=1e-3))


def test_a_norm_written_with_einsum_shows_no_softmax_row_sums(graded):
    """einsum('nd,nd->n', h, h) looks like probs @ v to the observer; norms have no softmax, so no
    row-sum line (it read ✗ under a pass)."""
    from pathlib import Path

    result = graded(Path(__file__).parent / "corpus" / "norms" / "ok_einsum_flatten.py")
    assert result.passed, result.checks
    assert result.row_sums is None


@pytest.mark.parametrize(("name", "mistake"), [
    ("norm_wrong_dim_batch.py", "norm_wrong_dim"), ("norm_wrong_dim_last_two.py", "norm_wrong_dim"),
    ("layernorm_no_mean_variance.py", "layernorm_no_mean"),
])
def test_more_wrong_dims_and_an_uncentred_variance_are_named(graded, name, mistake):
    from pathlib import Path

    result = graded(Path(__file__).parent / "corpus" / "norms" / name)
    assert [d.id for d in result.diagnoses] == [mistake]


def test_an_eps_default_is_explained_with_the_learners_line(graded):
    """Issue 30 §3: the divergence points at the learner's `eps=1e-5` and quotes the learner's own
    line that uses it, never the reference's `h * torch.rsqrt(variance + self.eps)`."""
    from attnprep import wording

    from pathlib import Path

    path = Path(__file__).parent / "corpus" / "norms" / "norm_eps_convention.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    d = graded(path).divergence
    assert d is not None and d.reason == "scalar" and "eps=1e-5" in lines[d.line - 1]
    assert any(d.ref_code in line for line in lines), d.ref_code  # a line of the learner's file
    texts.set_language("en")
    try:
        assert f"used in your `{d.ref_code}`" in wording.divergence_text(d)
    finally:
        texts.set_language(None)


# How tests/test_mutation.py mutates the reference (keys and defaults there, in MUTATION_DEFAULTS).
MUTATION = {"min": 30, "sample": 5, "focus": ("param_drop", "cast"),
            "families": {"constant", "scale", "arith", "cast", "param_drop"}}


def test_a_detached_weight_alone_is_the_gradients_verdict(graded, tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    import attnprep.cli  # noqa: F401
    from attnprep.app import app

    path = Path(__file__).parent / "corpus" / "norms" / "layernorm_weight_detached.py"
    result = graded(path)
    assert result.verdict is Verdict.GRADIENTS
    assert [c.id for c in result.checks if c.passed is False] == ["gradients"]
    assert result.divergence is None
    monkeypatch.chdir(tmp_path)
    try:
        for lang, label in (("en", "wrong gradients"), ("zh", "梯度错误")):
            out = CliRunner().invoke(app, ["--lang", lang, "check", "--json", str(path)])
            assert out.exit_code == 1
            doc = json.loads(out.stdout)["results"][0]
            assert (doc["verdict"], doc["label"]) == ("gradients", label)
    finally:
        texts.set_language(None)  # --lang sets the process's language: not for the tests after this one


# --- the mistakes as edits of the reference (issue 25 §2) -------------------------------------------


# two mistakes at once: one in each class (each class's outputs are its own knob's) …
ACROSS = [("rmsnorm_subtracts_mean", "norm_no_upcast:ln"), ("norm_eps_outside_sqrt:rms", "norm_unbiased_variance"),
          ("norm_no_upcast:rms", "norm_wrong_dim:ln"), ("rmsnorm_one_plus_weight", "layernorm_bias_not_applied"),
          ("norm_rsqrt_inverted:rms", "layernorm_no_mean"), ("norm_eps_missing:rms", "norm_eps_outside_sqrt:ln")]
# … or an eps mistake with a mistake of the computation in the same class
WITH_EPS = [("norm_eps_convention:rms=1e-5", "norm_no_upcast"), ("norm_eps_ignored", "norm_eps_outside_sqrt"),
            ("norm_eps_missing:ln", "layernorm_no_mean:variance"), ("norm_eps_convention:swapped", "norm_wrong_dim:batch")]


def _outputs(kind, ci: int, knob) -> list[dict]:
    return variant_outputs(kind, ci, knob, 0.0)


@pytest.mark.parametrize("knob", EX.grading["knobs"])
def test_every_knob_is_an_edit_that_applies_once_and_changes_an_output(knob):
    from attnprep.grader.edits import edited_source

    source = EX.solution_path.read_text(encoding="utf-8")
    for edit in EX.grading["edits"][knob]:
        assert source.count(edit["old"]) == 1, edit
        source = edited_source(source, [edit])
    kind = kind_for(EX, seed=0)
    reference = {ci: kind.reference(ci) for ci in range(len(kind.configs))}
    outputs = {ci: _outputs(kind, ci, knob) for ci in range(len(kind.configs))}
    differs = set()
    for ci in outputs:
        for case, got in zip(kind.cases(ci), outputs[ci]):
            with torch.no_grad():
                want = reference[ci](case)
            differs |= {name for name in got if not same(case, got[name], want[name])}
    # a sub-variant ":rms" / ":ln" changes that class only
    part = knob.partition(":")[2].split("=")[0].split("_")[0]
    expected = {"rms": {"RMSNorm"}, "ln": {"LayerNorm"}}.get(part)
    assert differs and (expected is None or differs == expected), (knob, differs)


@pytest.mark.parametrize("pair", ACROSS, ids=str)
def test_two_mistakes_in_the_two_classes_compose(pair):
    """Each class's outputs under the pair are its own knob's."""
    kind = kind_for(EX, seed=0)
    for ci in range(len(kind.configs)):
        both = _outputs(kind, ci, pair)
        alone = dict(zip(kind.objects, (_outputs(kind, ci, k) for k in pair)))
        for n, case in enumerate(kind.cases(ci)):
            for name in kind.objects:
                assert same(case, both[n][name], alone[name][n][name]), (pair, ci, str(case.name), name)


@pytest.mark.parametrize("pair", WITH_EPS, ids=str)
def test_an_eps_mistake_composes_with_a_mistake_of_the_computation(pair):
    """Where the eps mistake alone changes nothing (a config whose eps it does not touch), the pair is
    the other mistake alone; somewhere it is not."""
    kind = kind_for(EX, seed=0)
    eps_knob, other = pair
    apart = False
    for ci in range(len(kind.configs)):
        cases = kind.cases(ci)
        both, alone, eps_alone = (_outputs(kind, ci, k) for k in (pair, other, eps_knob))
        with torch.no_grad():
            ref = [kind.reference(ci)(case) for case in cases]
        inert = all(same(c, e[n], r[n]) for c, e, r in zip(cases, eps_alone, ref) for n in kind.objects)
        as_other = all(same(c, b[n], a[n]) for c, b, a in zip(cases, both, alone) for n in kind.objects)
        assert as_other or not inert, (pair, ci)
        apart |= not as_other
    assert apart, pair


# --- issue 24: each object named from its own outputs ------------------------------------------


CORPUS_NORMS = Path(__file__).parent / "corpus" / "norms"


def test_each_object_is_named_from_its_own_outputs(graded):
    result = graded(CORPUS_NORMS / "rms_no_upcast_ln_unbiased.py")
    shown = {d.id: d.evidence[0] for d in result.diagnoses}
    assert set(shown) == {"norm_no_upcast", "norm_unbiased_variance"}
    assert all(e.key == "evidence.object_apart" for e in shown.values())
    assert shown["norm_no_upcast"].params["output"] == "RMSNorm"
    assert shown["norm_unbiased_variance"].params["output"] == "LayerNorm"
