"""Self-check of the exercise registry (rustlings' maintainer check, for data and stubs).

Every exercise's TOML is held against the exercise contracts written out independently below, against the mistake
catalogue, against its rendered stub (parsed and executed) and against its reference solution.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import subprocess
import sys
import tomllib

import pytest

from attnprep import exercises
from attnprep.exercises import evaluate, mistake_catalogue, registry, render_stub
from per_exercise import declared, exec_stub, needs_solution_regions

# --- the exercise contracts, written out by hand (not read from the TOML) ------------------------------------

# Each exercise's contract as SPEC writes it is CONTRACT in its tests/test_ex_<id>.py (kind, objects,
# signatures, the parameter shapes for a config): adding an exercise adds it there, not here.
SPEC = {i: c for i, c in declared("CONTRACT").items() if c is not None}
ORDER = {i: c["order"] for i, c in SPEC.items() if "order" in c}  # the mission's six, first in the listing

MODULE_FORWARD = "x, attention_mask=None, is_causal=False"
CACHED_FORWARD = "x, cache=None"  # the cached modules: a script of calls forward(x, cache) -> (out, cache)


def spec_params(exercise_id: str, a: dict) -> dict[str, tuple[int, ...]]:
    """Parameter shapes of the exercise's written contract for constructor arguments ``a``."""
    params = SPEC[exercise_id].get("params")
    return params(a) if params else {}


# Which mistakes can happen in which exercise: the rules live in attnprep/exercises/applies.py
# (exercises/applies.py), read by `attnprep dev check` too.
from attnprep.exercises.applies import (  # noqa: E402
    _ATTENTION, _BIASED, _CACHED, _CAUSAL, _CAUSAL_FUNCTIONS, _FUSED, _GROUPED, _LATENT, _LOW_PRECISION,
    _MAKES_TENSORS, _MLA_DECODE, _MODULE, _NORM, _PADDING, _PROJECTED, _ROWS, _SDPA, _WINDOWED,
    MISTAKE_APPLIES, OWN_MISTAKES, _k_as_wide_as_v, _one_module, _traits, mistake_applies,
)

IDS = sorted(SPEC)  # the exercises written out above; the registry may hold more
ALL_IDS = list(registry())  # every exercise: the registry-walking checks
MODULE_IDS = [i for i in IDS if SPEC[i]["kind"] == "attention_module"]


# --- helpers ---------------------------------------------------------------------------------


def _args(signature: str) -> ast.arguments:
    return ast.parse(f"def f({signature}): pass").body[0].args


def _arg_names(signature: str) -> list[str]:
    return [a.arg for a in _args(signature).args]


def _defaults(args: ast.arguments) -> dict[str, object]:
    names = [a.arg for a in args.args]
    return dict(zip(names[len(names) - len(args.defaults):], (ast.literal_eval(d) for d in args.defaults)))


def _same_signature(got: ast.arguments, expected: str, *, annotations: bool) -> None:
    """got (from a parsed def, without self) against an argument list written as Python."""
    want = _args(expected)
    assert [a.arg for a in got.args] == [a.arg for a in want.args]
    assert _defaults(got) == _defaults(want)
    assert not got.vararg and not got.kwarg and not got.kwonlyargs, "no *args/**kwargs in a contract"
    if annotations:
        assert [ast.unparse(a.annotation) if a.annotation else None for a in got.args] == [
            ast.unparse(a.annotation) if a.annotation else None for a in want.args
        ]


def _without_self(args: ast.arguments) -> ast.arguments:
    assert args.args and args.args[0].arg == "self"
    return ast.arguments(
        posonlyargs=[], args=args.args[1:], vararg=args.vararg, kwonlyargs=args.kwonlyargs,
        kw_defaults=args.kw_defaults, kwarg=args.kwarg, defaults=args.defaults,
    )


def _sizes(ex, config: dict) -> dict:
    """``config`` with the sizes it leaves to their default filled in (``[grading] defaults``:
    ``d_context = "d_model"``)."""
    config = dict(config)
    for name, expression in ex.grading.get("defaults", {}).items():
        if config.get(name) is None:
            config[name] = evaluate(expression, config)
    return config


def _contract_shapes(ex, config: dict) -> dict[str, tuple[int, ...]]:
    config = _sizes(ex, config)
    shapes = {}
    for p in ex.contract.params:
        names = [p.name.replace("*", str(i)) for i in range(evaluate(p.repeat, config))] if p.repeat else [p.name]
        for name in names:  # a repeated role (experts.*.w1) once per index
            for tensor, shape in p.shapes(config).items():
                shapes[f"{name}.{tensor}"] = shape
    return shapes


def _configs():
    return [(i, c) for i in IDS for c in registry()[i].grading["configs"]]


# --- the registry as a whole -------------------------------------------------------------------


def test_registry_holds_the_six_exercises_in_teaching_order():
    assert len(ORDER) == 6, ORDER
    first = [i for i in registry() if i in ORDER]
    assert first == sorted(ORDER, key=ORDER.get) == list(registry())[: len(ORDER)]
    assert {i: registry()[i].order for i in ORDER} == ORDER


def test_orders_and_titles_are_unique():
    exs = list(registry().values())
    assert len({e.order for e in exs}) == len(exs)
    assert len({e.title for e in exs}) == len(exs)
    assert len({o for e in exs for o in e.contract.objects}) == sum(len(e.contract.objects) for e in exs)


def test_listing_agrees_with_the_registry_and_reads_only_the_head(monkeypatch):
    """`attnprep list` reads each exercise.toml's first block of lines; what it gets is what the
    full registry holds, and every shipped file keeps the listed keys in that block."""
    assert list(exercises.listing()) == list(registry())
    for ex in registry().values():
        listed = exercises.listing()[ex.id]
        assert (listed.title, listed.difficulty, listed.minutes, listed.order, listed.filename) == (
            ex.title, ex.difficulty, ex.minutes, ex.order, ex.filename)
        head = (ex.folder / "exercise.toml").read_text(encoding="utf-8").split("\n\n", 1)[0]
        assert set(exercises.LISTED) <= set(tomllib.loads(head)), ex.id


@pytest.mark.parametrize("layout", ["keys in the first block", "keys after a blank line", "head is not TOML alone"])
def test_listing_reads_any_layout_falling_back_to_the_whole_file(tmp_path, layout):
    text = {
        "keys in the first block": 'title = "T"\ndifficulty = "easy"\nsummary = "s"\nminutes = 3\norder = 9\n\n[contract]\nkind = "x"\n',
        "keys after a blank line": 'summary = "s"\n\ntitle = "T"\ndifficulty = "easy"\nminutes = 3\norder = 9\n',
        "head is not TOML alone": 'title = """T\n\n"""\ndifficulty = "easy"\nminutes = 3\norder = 9\n',
    }[layout]
    path = tmp_path / "demo" / "exercise.toml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    listed = exercises._listing(path)
    assert listed == exercises.Listing("demo", "T\n\n" if layout == "head is not TOML alone" else "T", "easy", 3, 9)


def test_mistake_catalogue_ids_are_unique_and_complete():
    files = [exercises.HERE / "mistakes.toml", *sorted(exercises.HERE.glob("*/mistakes.toml"))]
    raw = [m for f in files for m in tomllib.loads(f.read_text(encoding="utf-8")).get("mistake", [])]
    ids = [m["id"] for m in raw]
    assert len(ids) == len(set(ids))
    for m in raw:
        assert {"id", "title", "why", "fix"} <= set(m) <= {"id", "title", "why", "fix", "category", "named_by", "pair", "observed",
                                                           "fix_for", "mask", "early_in_pairs", "evidence", "superseded_by",
                                                           "shown_by", "any_exercise"}, m["id"]
        from attnprep.grader.judge import SHOWN_BY

        assert m.get("shown_by", "") in ("", *SHOWN_BY), m["id"]  # a probe the judge has
        assert set(m.get("evidence", ())) <= {"score_ratio", "softmax_dim", "row_sums"}, m["id"]  # what the judge can add
        assert m.get("superseded_by", "") in ("", *ids), m["id"]
        for ids, text in m.get("fix_for", {}).items():  # exercise ids, each listing this mistake
            assert text.strip() and all(m["id"] in [x.id for x in exercises.get(i).mistakes] for i in ids.split()), (m["id"], ids)
        assert all(m[k].strip() for k in ("id", "title", "why", "fix")), m["id"]
        assert re.fullmatch(r"[a-z][a-z0-9_]*", m["id"]), m["id"]
        assert m.get("category", "wrong_output") in {"wrong_output", "mask_leak", "structure", "wrong_shape", "error"}
        assert m.get("named_by", "variant") in {"variant", "evidence", "pair"}
        assert (m.get("named_by") == "pair") == ("pair" in m) and len(m.get("pair", [1, 2])) == 2, m["id"]


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_a_typo_in_grading_fails_loudly(exercise_id):
    """[grading] is read once as its kind's typed, frozen table: the shipped one fits, and a key the
    kind does not read (a typo, a dead key) or a misspelt one raises, naming the exercise and the
    keys, instead of silently changing how the exercise is graded."""
    import dataclasses

    from attnprep.grader.kinds import kind_for
    from attnprep.grader.kinds.base import GradingError

    ex = registry()[exercise_id]
    kind = kind_for(ex, 0)
    assert dataclasses.is_dataclass(kind.grading) and list(kind.configs) == [dict(c) for c in ex.grading["configs"]]
    with pytest.raises(dataclasses.FrozenInstanceError):
        kind.grading.knobs = ()
    with pytest.raises(GradingError, match=rf"exercises/{exercise_id}/.*unknown key\(s\) knobz"):
        kind_for(ex._replace(grading={**ex.grading, "knobz": ["missing_scale"]}), 0)
    required = {f.name for f in dataclasses.fields(kind.grading)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    for key in ex.grading:  # each key misspelt: unknown, and missing when the kind needs it
        table = {(f"{key}_" if k == key else k): v for k, v in ex.grading.items()}
        with pytest.raises(GradingError) as raised:
            kind_for(ex._replace(grading=table), 0)
        assert (raised.value.exercise_id, raised.value.unknown) == (exercise_id, [f"{key}_"])
        assert raised.value.missing == ([key] if key in required else []), key


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_every_config_has_exactly_one_observed_case(exercise_id):
    """What the pipeline relies on (Kind.cases): one observed case per config, from which the child
    observes the attention and the report draws its panels."""
    from attnprep.grader.kinds import kind_for

    kind = kind_for(registry()[exercise_id], 0)
    assert [sum(c.observe for c in kind.cases(ci)) for ci in range(len(kind.configs))] == [1] * len(kind.configs)


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_every_listed_mistake_has_a_knob_or_is_named_by_evidence(exercise_id):
    """rustlings' self-check, for the diagnosis: a mistake an exercise lists is reproduced by a
    knob of its kind, or named from what the grader observes; every knob is a listed mistake."""
    ex = registry()[exercise_id]
    knobs = ex.grading.get("knobs", [])
    listed = {m.id for m in ex.mistakes}
    assert {k.split(":")[0] for k in knobs} <= listed, sorted({k.split(":")[0] for k in knobs} - listed)
    whole = {k.split(":")[0] for k in knobs}
    for m in ex.mistakes:
        if m.named_by == "pair":
            assert set(m.pair) <= whole, (m.id, m.pair)
        else:
            assert m.named_by == "evidence" or m.id in whole, m.id


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_referenced_mistakes_exist_once(exercise_id):
    raw = tomllib.loads((exercises.HERE / exercise_id / "exercise.toml").read_text(encoding="utf-8"))
    ids = raw.get("mistakes", [])
    missing = [m for m in ids if m not in mistake_catalogue()]
    assert not missing, f"{exercise_id} names mistakes that are not in mistakes.toml: {missing}"
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_listed_mistakes_are_exactly_those_that_can_happen(exercise_id):
    ex = registry()[exercise_id]
    listed = {m.id for m in ex.mistakes}
    judged = {m for m in mistake_catalogue() if mistake_applies(m, ex) is not None}
    expected = {m for m in judged if mistake_applies(m, ex)}
    assert listed & judged == expected, (
        f"missing: {sorted(expected - listed)}, cannot happen here: {sorted((listed & judged) - expected)}"
    )


def test_every_catalogued_mistake_is_used_by_some_exercise():
    used = {m.id for e in registry().values() for m in e.mistakes}
    assert set(mistake_catalogue()) <= used, sorted(set(mistake_catalogue()) - used)


def test_registry_and_rendering_do_not_import_torch():
    code = (
        "import sys\n"
        "from attnprep.exercises import registry, render_stub\n"
        "for e in registry().values():\n"
        "    if e.solution_path.exists() or 'solution_region(' not in e.stub_template.read_text():\n"
        "        render_stub(e)\n"
        "assert 'torch' not in sys.modules, 'the registry imported torch'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- one exercise's data -------------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", ALL_IDS)
def test_metadata(exercise_id):
    ex = registry()[exercise_id]
    assert ex.title.strip() and ex.summary.strip()
    assert ex.difficulty in {"easy", "medium", "hard"}
    assert 1 <= ex.minutes <= 30
    assert len(ex.hints) >= 3 and all(h.strip() for h in ex.hints)
    assert len(set(ex.hints)) == len(ex.hints)
    assert 3 <= len(ex.key_points) <= 6
    assert len(ex.qa) >= 5
    for qa in ex.qa:
        assert "?" in qa.q, qa.q
        assert len(qa.a.split()) >= 8, qa.a


@pytest.mark.parametrize("exercise_id", IDS)
def test_contract_matches_spec(exercise_id):
    ex, spec = registry()[exercise_id], SPEC[exercise_id]
    assert ex.contract.kind == spec["kind"]
    assert ex.contract.objects == spec["objects"]
    assert ex.contract.details
    if spec["kind"] == "attention_module":
        _same_signature(_args(ex.contract.constructor), spec["constructor"], annotations=False)
        _same_signature(_args(ex.contract.forward), MODULE_FORWARD, annotations=False)
        assert ex.contract.returns == "(B, T, d_model)"
    elif spec["kind"] == "norm_modules":
        assert ex.contract.params == ()  # each class's own parameters: [grading] params
        assert {n: ex.grading["eps"][n] for n in spec["objects"]} == {
            n: _defaults(_args(c))["eps"] for n, c in spec["constructors"].items()}
        assert {n: tuple(r) for n, r in ex.grading["params"].items()} == {"RMSNorm": ("weight",), "LayerNorm": ("weight", "bias")}
        _same_signature(_args(ex.contract.forward), "x", annotations=False)
    elif spec["kind"] in ("plain_module", "routed_module", "adapter_module"):
        _same_signature(_args(ex.contract.constructor), spec["constructor"], annotations=False)
        _same_signature(_args(ex.contract.forward), "x", annotations=False)
    elif spec["kind"] == "cached_module":
        _same_signature(_args(ex.contract.constructor), spec["constructor"], annotations=False)
        _same_signature(_args(ex.contract.forward), CACHED_FORWARD, annotations=False)
        assert ex.contract.returns == "(out, cache)"
    elif "forward" in spec:  # a module with a forward of its own (a cross-attention's context)
        _same_signature(_args(ex.contract.constructor), spec["constructor"], annotations=False)
        _same_signature(_args(ex.contract.forward), spec["forward"], annotations=False)
        assert ex.contract.returns == spec["returns"]
    elif spec["kind"] == "block_module":
        _same_signature(_args(ex.contract.constructor), spec["constructor"], annotations=False)
        _same_signature(_args(ex.contract.forward), "x, attention_mask=None", annotations=False)
        assert ex.contract.returns == "(B, T, d_model)"
    else:
        assert ex.contract.constructor == "" and ex.contract.params == ()
        # the contract's forward is the attention function's argument list
        _same_signature(_args(ex.contract.forward), spec["signatures"][ex.contract.objects[-1]], annotations=False)
        assert ex.contract.returns == spec.get("returns", "(B, H, T, D)")


@pytest.mark.parametrize("exercise_id", MODULE_IDS)
def test_grading_configs_cover_the_interesting_sizes(exercise_id):
    ex = registry()[exercise_id]
    configs = ex.grading["configs"]
    names = _arg_names(ex.contract.constructor)
    required = set(names) - set(_defaults(_args(ex.contract.constructor)))
    assert len(configs) >= 3
    for c in configs:
        assert required <= set(c) <= set(names), c
        assert c["d_model"] <= 24, c
        if not any(n.endswith("head_dim") for n in names):  # head_dim = d_model // num_heads
            assert c["d_model"] % c["num_heads"] == 0, c
    assert sum(c["num_heads"] != 1 for c in configs) > len(configs) / 2
    assert any(c["num_heads"] % 2 == 1 and c["num_heads"] > 1 for c in configs), "an odd head count > 1"
    if "dropout" in names:
        assert any(c.get("dropout", 0.0) > 0 for c in configs), "eval() must be shown to switch dropout off"


@pytest.mark.parametrize(("exercise_id", "config"), _configs())
def test_param_shapes_match_spec(exercise_id, config):
    ex = registry()[exercise_id]
    assert _contract_shapes(ex, config) == spec_params(exercise_id, config)
    for p in ex.contract.params:  # every expression evaluates to a positive size
        for expr in (p.in_features, p.out_features):
            if expr:
                assert evaluate(expr, _sizes(ex, config)) > 0


# --- stubs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_renders_to_python_stating_the_contract(exercise_id):
    ex = registry()[exercise_id]
    needs_solution_regions(ex)
    source = render_stub(ex)
    assert source.splitlines()[0] == f"# attnprep: {exercise_id}"
    assert exercises.detect(source) == exercise_id
    tree = ast.parse(compile(source, f"{exercise_id}.py", "exec", flags=ast.PyCF_ONLY_AST))
    doc = ast.get_docstring(tree)
    assert doc and f"attnprep hint {exercise_id}" in doc
    assert ex.contract.details.splitlines()[0] in doc
    if _CACHED(ex):  # no padding: the cache and the calls are the contract
        assert "prefill" in doc and "cache" in doc
    elif "attention_mask" in ex.contract.forward:
        assert "True = real token" in doc
    assert all(name in doc for name in ex.contract.objects)
    for p in ex.contract.params:
        assert f"self.{p.name} = " in doc, p.name
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    assert {"math", "torch", "nn", "F"} <= imported
    assert "{{" not in source and "{%" not in source


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_signatures_match_the_contract(exercise_id):
    ex = registry()[exercise_id]
    needs_solution_regions(ex)
    tree = ast.parse(render_stub(ex))
    top = {n.name: n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    for name in ex.contract.objects:
        assert name in top, f"stub does not define {name}"
    if _one_module(ex):
        (cls,) = [top[n] for n in ex.contract.objects]
        assert any(isinstance(b, ast.Attribute) and b.attr == "Module" for b in cls.bases)
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        _same_signature(_without_self(methods["__init__"].args), ex.contract.constructor, annotations=True)
        _same_signature(_without_self(methods["forward"].args), ex.contract.forward, annotations=True)
        _same_signature(_without_self(methods["__init__"].args), SPEC[exercise_id]["constructor"], annotations=False)
    elif "constructors" in SPEC[exercise_id]:  # several module classes
        for name, constructor in SPEC[exercise_id]["constructors"].items():
            cls = top[name]
            assert any(isinstance(b, ast.Attribute) and b.attr == "Module" for b in cls.bases)
            methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
            _same_signature(_without_self(methods["__init__"].args), constructor, annotations=False)
            _same_signature(_without_self(methods["forward"].args), ex.contract.forward, annotations=True)
    else:
        for name, signature in SPEC[exercise_id]["signatures"].items():
            assert isinstance(top[name], ast.FunctionDef)
            _same_signature(top[name].args, signature, annotations=False)
        _same_signature(top[ex.contract.objects[-1]].args, ex.contract.forward, annotations=True)


@pytest.mark.parametrize("exercise_id", MODULE_IDS)
def test_blank_module_stub_raises_not_implemented(exercise_id):
    import torch
    import torch.nn as nn

    ex = registry()[exercise_id]
    cls = exec_stub(ex)[ex.contract.objects[0]]
    config = ex.grading["configs"][0]
    with pytest.raises(NotImplementedError, match=f"attnprep hint {exercise_id}"):
        cls(**config)
    blank = cls.__new__(cls)  # forward must not pass silently either
    nn.Module.__init__(blank)
    with pytest.raises(NotImplementedError, match=f"attnprep hint {exercise_id}"):
        blank(torch.zeros(2, 3, config["d_model"]))


# --- against the reference solutions --------------------------------------------------------------


def _solution(exercise_id):
    name = registry()[exercise_id].solution_module
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} does not exist yet")
    return importlib.import_module(name)


@pytest.mark.parametrize(("exercise_id", "config"), [(i, c) for i, c in _configs() if registry()[i].contract.params])
def test_contract_params_are_the_reference_solutions_params(exercise_id, config):
    ex = registry()[exercise_id]
    args = {k: v for k, v in config.items() if k in _arg_names(ex.contract.constructor)}  # not the case sizes
    model = getattr(_solution(exercise_id), ex.contract.objects[0])(**args)
    got = {n: tuple(p.shape) for n, p in model.named_parameters()}
    assert got == _contract_shapes(ex, config)


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_solution_signatures_match_the_contract(exercise_id):
    import inspect

    ex = registry()[exercise_id]
    module = _solution(exercise_id)
    if _one_module(ex):
        cls = getattr(module, ex.contract.objects[0])
        pairs = [(cls.__init__, ex.contract.constructor), (cls.forward, ex.contract.forward)]
    elif "constructors" in SPEC[exercise_id]:  # several module classes
        pairs = [(getattr(module, n).__init__, c) for n, c in SPEC[exercise_id]["constructors"].items()]
        pairs += [(getattr(module, n).forward, ex.contract.forward) for n in ex.contract.objects]
    else:
        pairs = [(getattr(module, n), SPEC[exercise_id]["signatures"][n]) for n in ex.contract.objects]
    for fn, expected in pairs:
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        want = _args(expected)
        assert [p.name for p in params] == [a.arg for a in want.args], fn.__qualname__
        assert {p.name: p.default for p in params if p.default is not p.empty} == _defaults(want), fn.__qualname__


@pytest.mark.parametrize(("exercise_id", "config"), [(i, c) for i, c in _configs() if i in MODULE_IDS])
def test_reference_solution_runs_on_every_grading_config(exercise_id, config):
    import torch

    ex = registry()[exercise_id]
    model = getattr(_solution(exercise_id), ex.contract.objects[0])(**config).eval()
    x = torch.randn(2, 5, config["d_model"], generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    out = model(x, attention_mask=mask, is_causal=True)
    out = out[0] if isinstance(out, tuple) else out
    assert out.shape == x.shape and torch.isfinite(out[mask]).all()


# --- numbers quoted in the notes ------------------------------------------------------------------

def _agrees(written: str, value: float) -> bool:
    """'68.6' agrees with 68.625, '57' with 56.9 only if written as '~57' (rounded to the digits shown)."""
    decimals = len(written.partition(".")[2])
    return abs(float(written.replace(",", "")) - value) <= 0.5 * 10**-decimals + 1e-9


# (exercise, closed-form value, how it is written in the answers): QUOTED_NUMBERS in each tests/test_ex_<id>.py
QUOTED_NUMBERS = [(i, value, quoted) for i, rows in declared("QUOTED_NUMBERS", []).items() for value, quoted in rows]


@pytest.mark.parametrize(("exercise_id", "value", "quoted"), QUOTED_NUMBERS)
def test_numbers_in_the_answers_agree_with_the_formulas(exercise_id, value, quoted):
    answers = " ".join(qa.a for qa in registry()[exercise_id].qa)
    assert quoted in answers, f"{quoted!r} not found in {exercise_id}'s answers"
    numbers = [n.rstrip(",") for n in re.findall(r"\d[\d,]*(?:\.\d+)?", quoted)]
    assert any(_agrees(n, value) for n in numbers), f"{quoted!r} does not agree with {value}"
