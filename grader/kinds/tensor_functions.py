"""Kind ``tensor_functions``: functions of tensors with no parameters and no attention (a loss, a
sampler's distribution, a hand-written backward pass …), graded case by case on inputs declared as
data.

The contract's objects are functions. Each case of ``[grading] cases`` calls one of them (``call``,
default the first) with its tensor ``inputs`` in the declared order, positionally, and its ``args``
as keywords (an argument left out is the function's own default, so defaults are graded too). What
the function returns is named by ``[grading] outputs`` (a tuple in that order; a lone tensor is the
first).

An input is described, not stored: ``shape`` (sizes or expressions of the config's sizes, ``"B*T"``),
``dtype`` (``float32`` by default, ``long``, ``bool``), for floats ``scale`` and ``offset`` of normal
draws (``negative = true``: ``-|x|``), for integers ``high`` (``randint(0, high)``, an expression) and
``holes = { share, value }`` (that share of the entries set to ``value``, at least one entry left
alone, holding another value, and, with two or more, at least one set: e.g. ignored targets). A case may ask for ``stable = { arg = delta }``: its float inputs are
drawn again until the reference's outputs do not change when ``arg`` moves by ``±delta`` (no
threshold sits within ``delta`` of a graded value, e.g. a cumulative probability near ``top_p``).
Other case keys: ``observe`` (the case the report's panels show, exactly one), ``grads`` (the case
run with gradients on), ``alone = [i, j]`` (with the ``batch`` probe: rows ``i:j`` of every input as
a case of their own, whose outputs must equal rows ``i:j`` of this case's).

Outputs are compared with the reference computed in float64 on the same values; a case whose float
inputs are large gets four ulps of its largest input as its tolerance (an exact-in-theory function
of inputs near 1e4 rounds its intermediates by about 1e-3 in float32).

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{ old, new }`` substitutions of the solution's text, each found exactly once); a knob's variant is
the edited reference, run in the inputs' own dtype as an attempt runs (so it overflows where the
attempt does), and two knobs at once are both edits made together.

Exercise data (``[grading]``): ``configs`` (named sizes), ``cases``, ``outputs`` (name -> the input
whose shape it has, or a fixed shape), ``probes`` (of ``batch``, ``gradients``, ``device``),
``forbidden`` (aten op -> name, the exercise's built-ins), ``knobs`` and ``edits``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from attnprep import exercises
from attnprep.exercises import evaluate
from attnprep.grader.cases import Case, alone, generator
from attnprep.grader.forbidden import ForbiddenOps
from attnprep.grader.kinds.base import Config, Grading, GradingError, Kind
from attnprep.grader.result import Name
from attnprep.grader.tensors import RTOL
from attnprep.grader.edits import EditError, EditedReference, edited_source, knobs_of  # noqa: F401  (kinds built on this one import them here)

DTYPES = {"float32": torch.float32, "float64": torch.float64, "long": torch.long, "bool": torch.bool}
REDRAWS = 200  # attempts at inputs that keep the ``stable`` arguments' thresholds away


def _size(value, config: dict) -> int:
    return value if isinstance(value, int) else evaluate(str(value).replace(" ", ""), config)


def _draw(spec: dict, config: dict, g: torch.Generator) -> torch.Tensor:
    """One input as its spec describes it, drawn from ``g``."""
    shape = tuple(_size(s, config) for s in spec["shape"])
    dtype = DTYPES[spec.get("dtype", "float32")]
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < float(spec.get("share", 0.5))
    if dtype == torch.long:
        t = torch.randint(0, _size(spec["high"], config), shape, generator=g)
        holes = spec.get("holes")
        if holes:
            where = torch.rand(shape, generator=g) < float(holes["share"])
            where.view(-1)[0] = False  # at least one entry counts …
            if t.numel() > 1 and not where.any():
                where.view(-1)[-1] = True  # … and at least one is a hole
            high, value = _size(spec["high"], config), int(holes["value"])
            if int(t.view(-1)[0]) == value:  # (a hole value that is also drawn, a class id: the kept entry another)
                t.view(-1)[0] = (value + 1) % high
            t = t.masked_fill(where, value)
        return t
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if spec.get("negative"):
        x = -x.abs()
    return (x * float(spec.get("scale", 1.0)) + float(spec.get("offset", 0.0))).to(dtype)


def _tolerance(inputs: dict[str, Any]) -> tuple[float, float] | None:
    """Four ulps of the largest float input, when that is above the grader's float32 tolerance."""
    floats = [t for t in inputs.values() if isinstance(t, torch.Tensor) and t.is_floating_point()]
    if not floats:
        return None
    big = max(float(t.abs().max()) if t.numel() else 0.0 for t in floats)
    tol = 4 * torch.finfo(floats[0].dtype).eps * big
    return (tol, tol) if tol > RTOL else None


@dataclass(frozen=True, kw_only=True)
class TensorGrading(Grading):
    cases: tuple[dict, ...]  # the cases: name, call, inputs, args, stable, observe, grads, alone
    outputs: dict[str, Any]  # output name -> the input whose shape it has, or a fixed shape
    probes: tuple[str, ...] = ()  # of batch, gradients, device
    forbidden: dict[str, str] = field(default_factory=dict)  # aten op -> the built-in's name
    edits: dict[str, list[dict]] = field(default_factory=dict)  # knob -> its {old, new} edits of the solution


@dataclass(frozen=True, eq=False, kw_only=True)
class SizesConfig(Config):
    """The sizes the exercise's case data names (``shape = ["B*T", "V"]``, ``high = "V"``, the
    outputs' shapes): exactly those, an int each. A size no case uses is unknown (a typo), one a
    case uses and the config lacks is missing."""

    sizes: ClassVar[bool] = True

    @classmethod
    def parse(cls, exercise, entry, where: str) -> "SizesConfig":
        used = _sizes_named(exercise.grading)
        unknown, missing = sorted(set(entry) - used), sorted(used - set(entry))
        wrong = [k for k, v in entry.items() if k in used and (isinstance(v, bool) or not isinstance(v, int))]
        if unknown or missing or wrong:
            raise GradingError(exercise.id, exercise.contract.kind, unknown, missing, where, wrong)
        return cls(given=dict(entry))


def _sizes_named(grading: dict) -> set[str]:
    """The names of sizes in the expressions of the case data (inputs' ``shape`` and ``high``) and
    of the outputs' shapes."""
    import ast

    expressions = [s for case in grading.get("cases", []) for spec in case.get("inputs", {}).values()
                   for s in [*spec.get("shape", []), spec.get("high", 0)]]
    expressions += [s for like in grading.get("outputs", {}).values() if isinstance(like, list) for s in like]
    return {node.id for e in expressions if isinstance(e, str)
            for node in ast.walk(ast.parse(e.replace(" ", ""), mode="eval")) if isinstance(node, ast.Name)}


CASE_KEYS = {"name", "inputs", "call", "args", "stable", "observe", "grads", "alone"}
INPUT_KEYS = {"shape", "dtype", "scale", "offset", "negative", "high", "holes", "share"}


def check_cases(exercise, grading: TensorGrading, probes: frozenset) -> None:
    """The case data as :func:`_draw` and the kind read it, checked once when the kind is built: a
    :class:`GradingError` naming the case (``cases[1] ("top_p=0.8")``, its input, or ``outputs``) and
    the keys unknown (a typo that would be silently ignored, ``stabel``), missing (``shape``; an
    argument ``stable`` moves without ``args`` giving it) or wrong (a dtype, an object to ``call``,
    an ``alone`` slice, a second observed case), instead of a ``KeyError`` from the middle of grading
    or an error blamed on the attempt."""
    def bad(where, unknown=(), missing=(), wrong=()):
        raise GradingError(exercise.id, exercise.contract.kind, sorted(unknown), list(missing), where, list(wrong))

    objects = set(exercise.contract.objects)
    observed = []
    for i, case in enumerate(grading.cases):
        if not isinstance(case, dict):
            bad(f"cases[{i}]", wrong=["the case (a table)"])
        where = f"cases[{i}]" + (f" ({case['name']!r})" if "name" in case else "")
        unknown, missing = set(case) - CASE_KEYS, [k for k in ("name", "inputs") if k not in case]
        args = case.get("args", {})
        if not isinstance(args, dict):
            bad(where, wrong=["args"])
        stable = case.get("stable", {})
        missing += [f"args.{a}" for a in (stable if isinstance(stable, dict) else {}) if a not in args]
        if unknown or missing:
            bad(where, unknown, missing)
        wrong = [k for k, ok in (("name", isinstance(case["name"], str)),
                                 ("inputs", isinstance(case["inputs"], dict) and bool(case["inputs"])),
                                 ("stable", isinstance(stable, dict) and all(isinstance(v, (int, float)) for v in stable.values())),
                                 ("call", case.get("call", next(iter(objects))) in objects),
                                 ("alone", "alone" not in case or (isinstance(case["alone"], list) and len(case["alone"]) == 2
                                                                  and all(isinstance(v, int) for v in case["alone"])
                                                                  and 0 <= case["alone"][0] < case["alone"][1])))
                 if not ok]
        if "alone" in case and "batch" not in probes:
            wrong.append("alone (without the batch probe)")
        if wrong:
            bad(where, wrong=wrong)
        if case.get("observe"):
            observed.append(where)
        for name, spec in case["inputs"].items():
            at = f"{where} inputs.{name}"
            if not isinstance(spec, dict):
                bad(at, wrong=["the input (a table)"])
            dtype = spec.get("dtype", "float32")
            needed = ["shape"] + (["high"] if dtype == "long" else [])
            unknown, missing = set(spec) - INPUT_KEYS, [k for k in needed if k not in spec]
            if unknown or missing:
                bad(at, unknown, missing)
            holes = spec.get("holes")
            wrong = [k for k, ok in (("dtype", dtype in DTYPES),
                                     ("shape", isinstance(spec["shape"], list) and all(isinstance(v, (int, str)) for v in spec["shape"])),
                                     ("holes", holes is None or dtype == "long" and isinstance(holes, dict)
                                      and set(holes) == {"share", "value"}))
                     if not ok]
            if wrong:
                bad(at, wrong=wrong)
    if len(observed) != 1:  # the case the report's panels show and the child observes: exactly one
        bad(f"cases[{len(grading.cases) - 1}]" if not observed else observed[1],
            missing=["observe (exactly one case has observe = true)"] if not observed else [],
            wrong=["observe (exactly one case has observe = true)"] if observed else [])
    names = set().union(*(case["inputs"] for case in grading.cases)) if grading.cases else set()
    wrong = [n for n, like in grading.outputs.items()
             if not (isinstance(like, list) or like in names and all(like in c["inputs"] for c in grading.cases))]
    if wrong:
        bad("outputs", wrong=wrong)


class TensorFunctions(Kind):
    Grading = TensorGrading
    Config = SizesConfig
    traits = frozenset({"makes_tensors"})
    pair_knobs = True
    stages = ()  # no attention stages (q, kᵀ, scores …) in the shapes panel

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        grading = self.grading
        self.case_specs: list[dict] = [dict(c) for c in grading.cases]
        self.outputs: dict[str, Any] = dict(grading.outputs)
        self.probes = frozenset(grading.probes)
        check_cases(exercise, grading, self.probes)
        self.forbidden: dict[str, str] = dict(grading.forbidden)
        self.edits: dict[str, list[dict]] = {k: list(v) for k, v in grading.edits.items()}
        self.edited = EditedReference(exercise.solution_path, self.edits)
        # Drawn here, in the grading process: a ``stable`` case asks the reference, which never
        # enters the child. Then the reference is dropped, so the forked child holds none of it.
        self._cases: dict[int, list[Case]] = {ci: self._make_cases(ci) for ci in range(len(self.configs))}
        self.edited.forget()

    # --- cases --------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        if ci not in self._cases:  # a config added after construction (benchmarks/mutation.py's probe configs)
            self._cases[ci] = self._make_cases(ci)
        return [dataclasses.replace(c, inputs=dict(c.inputs)) for c in self._cases[ci]]

    def _make_cases(self, ci: int) -> list[Case]:
        config = self.configs[ci]
        out: list[Case] = []
        words = exercises.own_names(self.exercise.id)
        for n, spec in enumerate(self.case_specs):
            g = generator(self.seed, ci, f"tensor case {n}")
            inputs = self._inputs(spec, config, g)
            # the exercise's own name of the case, said in each language from its folder's texts
            name = Name.own(spec["name"], {lang: said[spec["name"]] for lang, said in words.items() if spec["name"] in said})
            one = torch.ones(1, 1, dtype=torch.bool)
            case = Case(name, inputs, one, (1, 1), observe=bool(spec.get("observe")), grads=bool(spec.get("grads")),
                        dtype=self._dtype(inputs), tolerance=_tolerance(inputs))
            out.append(case)
            if "alone" in spec and "batch" in self.probes:
                i, j = spec["alone"]
                part = {k: v[i:j].clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
                rows = alone(name, j, "row") if j == i + 1 else Name(f"{name}, rows {i + 1}..{j} alone", "name.rows_alone_of",
                                                                       case=name, a=i + 1, b=j)
                out.append(Case(rows, part, one, (1, 1), base=name, base_rows=(i, j),
                                check="batch", dtype=case.dtype, tolerance=case.tolerance))
        return out

    def _inputs(self, spec: dict, config: dict, g: torch.Generator) -> dict[str, Any]:
        """The case's tensors (in call order) and its keyword arguments, redrawn while a ``stable``
        argument's threshold sits too close to the reference's values."""
        args = dict(spec.get("args", {}))
        for _ in range(REDRAWS):
            inputs = {k: _draw(s, config, g) for k, s in spec["inputs"].items()}
            inputs["_args"] = args
            inputs["_call"] = spec.get("call", self.exercise.contract.objects[0])
            if all(self._steady(inputs, arg, float(delta)) for arg, delta in spec.get("stable", {}).items()):
                return inputs
        raise ValueError(f"case {spec['name']!r}: no inputs keep {sorted(spec['stable'])} stable")

    def _steady(self, inputs: dict, arg: str, delta: float) -> bool:
        def at(value):
            moved = dict(inputs, _args={**inputs["_args"], arg: value})
            return self._call(self.solution(), moved, exact=True)

        base = inputs["_args"][arg]
        low, high = at(base - delta), at(base + delta)
        return all(torch.equal(low[n], high[n]) for n in low)

    @staticmethod
    def _dtype(inputs: dict) -> str:
        floats = [t for t in inputs.values() if isinstance(t, torch.Tensor) and t.is_floating_point()]
        return str(floats[0].dtype).replace("torch.", "") if floats else "float32"

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        return {k: v for k, v in self.configs[ci].items() if isinstance(v, int)}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        shapes = {}
        for name, like in self.outputs.items():
            if isinstance(like, str):
                shapes[name] = tuple(case.inputs[like].shape)
            else:
                shapes[name] = tuple(_size(s, self.configs[ci]) for s in like)
        return shapes

    def _call(self, functions: dict, inputs: dict, exact: bool = False, clone: bool = True) -> dict[str, Any]:
        tensors = [v.clone() if clone else v for k, v in inputs.items() if not k.startswith("_")]
        if exact:
            tensors = [t.double() if t.is_floating_point() else t for t in tensors]
        got = functions[inputs["_call"]](*tensors, **inputs["_args"])
        names = list(self.outputs)
        if isinstance(got, (tuple, list)) and not isinstance(got, torch.Tensor):
            return {n: (got[i] if i < len(got) else None) for i, n in enumerate(names)}
        return {names[0]: got, **{n: None for n in names[1:]}}

    # --- child --------------------------------------------------------------------------------

    def run(self, attempt, case: Case) -> dict[str, Any]:
        with ForbiddenOps(self.forbidden, self.seen_builtins):  # the child's own copies: changed in place, it sees it
            return self._call(attempt, case.inputs, clone=False)

    def grad_leaves(self, attempt, case: Case, built=None):
        """A copy of the case whose float inputs are leaves (named as the inputs)."""
        inputs, leaves = dict(case.inputs), {}
        for k, v in case.inputs.items():
            if isinstance(v, torch.Tensor) and v.is_floating_point():
                inputs[k] = leaves[k] = v.detach().clone().requires_grad_(True)
        return dataclasses.replace(case, inputs=inputs), leaves

    # --- parent -------------------------------------------------------------------------------

    def solution(self) -> dict:
        """The reference's functions, compiled from its file here (not imported: no module of the
        solutions is left behind for a child forked later)."""
        return self.variant_functions(())

    def reference(self, ci: int, zero_bias=frozenset()):
        """The reference on the case's values, computed in float64."""
        functions = self.solution()
        return lambda case: self._call(functions, case.inputs, exact=True)

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        """The reference run in the inputs' own dtype, as the attempt is (the divergence finder's trail)."""
        functions = self.solution()
        return lambda case: self._call(functions, case.inputs)

    def reference_grads(self, ci: int, zero_bias, case: Case):
        inputs = {k: v.detach().double().requires_grad_(True) if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                  for k, v in case.inputs.items()}
        tensors = [v for k, v in inputs.items() if not k.startswith("_")]
        got = self.solution()[inputs["_call"]](*tensors, **inputs["_args"])
        got = got if isinstance(got, (tuple, list)) else (got,)
        outputs = dict(zip(self.outputs, got))
        total = sum((o.nan_to_num() * case.mask(n, tuple(o.shape)).to(o.dtype)).sum() for n, o in outputs.items())
        total.backward()
        grads = {k: v.grad for k, v in inputs.items() if isinstance(v, torch.Tensor) and v.grad is not None}
        return outputs, grads

    def variant_functions(self, knobs: tuple[str, ...]) -> dict:
        """The reference's functions with the edits of ``knobs`` made (compiled once per knob set);
        no knobs: the reference itself, under its own file name (the divergence finder traces it)."""
        namespace = self.edited.namespace(knobs)
        return {n: namespace[n] for n in self.exercise.contract.objects}

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the mistake ``knob`` (a knob, or a tuple of knobs made together), run
        in the inputs' own dtype as an attempt runs."""
        knobs = knobs_of(knob)
        # compiled when first called: two knobs whose edits clash raise there, where the judge
        # takes a variant that cannot run as naming nothing
        return lambda case: self._call(self.variant_functions(knobs), case.inputs)


KIND = TensorFunctions
