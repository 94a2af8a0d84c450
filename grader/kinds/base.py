"""The one interface every exercise kind implements: the base class :class:`Kind`.

A kind is how one shape of exercise is driven: what the attempt provides (a module, functions, a
cached module …), its cases, how to call it (one call or a script of calls), the reference and its
mistaken variants, which generic probes apply, and its own checks. The pipeline (``engine``,
``child``, ``judge``) and the report only ever talk to a :class:`Kind`; what is specific to one
exercise (its configs, which knobs apply, probe configs, the model a kind computes) is data in its
``exercises/<id>/exercise.toml``, whose ``[grading]`` table each kind reads as its own typed
:class:`Grading`, and each entry of its ``configs`` as its own typed :class:`Config` (unknown or
missing keys, or values of the wrong type, are a :class:`GradingError`).

A kind is a module of :mod:`attnprep.grader.kinds` named by ``contract.kind`` that defines
``KIND``, a subclass of :class:`Kind` (directly or through the kind it extends) built as
``KIND(exercise, seed)`` (see :func:`attnprep.grader.kinds.kind_for`). Every optional hook and
attribute is declared here once, with its default: a kind module holds only what differs.

Where it runs:

- *child* (the forked process that imports the attempt; the reference never enters it):
  :meth:`Kind.build`, :meth:`Kind.run`, :meth:`Kind.grad_leaves`, :meth:`Kind.device_tensors`,
  :meth:`Kind.child_extra`, :attr:`Kind.seen_builtins`;
- *parent* (the grading process): :meth:`Kind.reference`, :meth:`Kind.trail_reference`,
  :meth:`Kind.reference_grads`, :meth:`Kind.solution`, :meth:`Kind.knobs`, :meth:`Kind.variant`,
  :meth:`Kind.answer`, :meth:`Kind.allowed`, :meth:`Kind.extra_checks`, :meth:`Kind.extra_diagnoses`,
  :meth:`Kind.names`,
  and the judge's switches :attr:`Kind.pair_knobs`, :attr:`Kind.mask_fills`, :attr:`Kind.outputs_apart`,
  :attr:`Kind.grads_of`, :attr:`Kind.stages`;
- both: :attr:`Kind.grading`, :attr:`Kind.configs` (of :attr:`Kind.Config`), :attr:`Kind.probes`, :meth:`Kind.cases`,
  :meth:`Kind.config_params`, :meth:`Kind.expected_shapes`, :meth:`Kind.axis_names`,
  :meth:`Kind.part_axis_names`.

:attr:`Kind.traits` is read by neither: it says which shared mistakes of the catalogue can happen in
the kind's exercises (tests/test_registry.py derives each exercise's mistake list from it).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Protocol

import torch

from attnprep.grader.cases import Case
from attnprep.grader.result import Check, Diagnosis, MappingNote

Outputs = dict[str, Any]  # named outputs of one case: {"out": tensor} or a script's {"step 1": …}
Runner = Callable[[Case], Outputs]

# The generic probes a kind may ask for (the judge runs them; the names are check ids).
PROBES = ("causality", "padding", "batch", "eval", "gradients", "device", "softmax_rows")

# What a kind's exercises compute, as far as the shared mistakes of the catalogue care (see
# :attr:`Kind.traits`; tests/test_registry.py's MISTAKE_APPLIES reads them):
TRAITS = {
    "attention": "scores of queries against keys, a softmax and masks",
    "rows": "the softmax runs over whole rows of scores (not over tiles, as a blocked kernel's)",
    "mask_function": "its first object is a causal mask function of its own, graded apart",
    "position_bias": "causal attention with a position bias added to the scores (ALiBi)",
    "torch_sdpa": "torch's scaled_dot_product_attention semantics: attn_mask, scale, L != S",
    "cached": "a script of calls over a cache the attempt returns and is given back",
    "low_precision": "graded in bfloat16 or float16 too, against the exact result",
    "makes_tensors": "makes tensors of its own (positions, indices) that must be on the inputs' device",
    "norm": "normalisation layers with an eps",
}


# The stages the child's observer records of an attention (attnprep.grader.observe), in order.
ATTENTION_STAGES = ("q", "k^T", "scores", "attn", "attn @ v")


class ContractError(Exception):
    """The attempt does not provide what the contract asks for; carries a text key and params."""

    def __init__(self, key: str, **params: Any):
        super().__init__(key)
        self.key = key
        self.params = params


class GradingError(ValueError):
    """An exercise's ``[grading]`` table does not fit its kind: keys the kind does not read (a typo
    would otherwise change grading silently) or keys it needs that are missing; in one entry of its
    ``configs`` (``where``: "configs[2]") also values of the wrong type (``wrong``: the keys).
    ``attnprep dev check`` says it in words (the texts ``devcheck.grading_keys`` / ``config_keys``)."""

    def __init__(self, exercise_id: str, kind: str, unknown: list[str], missing: list[str], where: str = "",
                 wrong: list[str] | None = None):
        wrong = wrong or []
        parts = []
        if unknown:
            parts.append(f"unknown key(s) {', '.join(unknown)}")
        if missing:
            parts.append(f"missing key(s) {', '.join(missing)}")
        if wrong:
            parts.append(f"wrong type or value for {', '.join(wrong)}")
        table = f"[grading] {where}" if where else "[grading]"
        super().__init__(f"exercises/{exercise_id}/exercise.toml {table} for kind {kind}: {'; '.join(parts)}")
        self.exercise_id, self.kind, self.unknown, self.missing = exercise_id, kind, unknown, missing
        self.where, self.wrong = where, wrong


_TYPES = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}


def _fits(value: Any, annotation: str) -> bool:
    """``value`` has the type an annotation written as text says ("int", "float | None" …);
    anything else (an annotation this does not know) fits."""
    allowed: tuple = ()
    for part in (p.strip() for p in str(annotation).split("|")):
        if part == "None":
            allowed += (type(None),)
        elif part in _TYPES:
            allowed += _TYPES[part]
        else:
            return True
    if isinstance(value, bool) and bool not in allowed:
        return False
    return isinstance(value, allowed)


@dataclass(frozen=True, eq=False, kw_only=True)
class Config(Mapping):
    """One entry of ``[grading] configs``, typed by its kind: the sizes the kind itself reads are the
    fields of a subclass (a kind that extends another extends its config); a kind whose attempt is
    built by the contract's constructor (:attr:`constructor`) takes the constructor's arguments too,
    by the contract's names and annotations; a kind whose cases are data (:attr:`sizes`) takes any
    size its data names. Unknown keys, missing ones and values of the wrong type are a
    :class:`GradingError` naming the entry. It reads as the mapping it was written as
    (``config["d_model"]``, ``dict(config)`` in the TOML's order), so a config is passed on as
    plain data."""

    constructor: ClassVar[bool] = False  # the contract's constructor arguments are keys too
    sizes: ClassVar[bool] = False  # any key whose value is an int (the sizes the exercise's data uses)
    given: Mapping[str, Any] = field(default_factory=dict)  # every key as written, in order

    @classmethod
    def call_args(cls, exercise) -> dict[str, tuple[str, bool]]:
        """Keys a kind takes besides its fields and the constructor's arguments: name -> (annotation
        as text, has a default), e.g. the call arguments an exercise's ``[grading]`` names as data."""
        return {}

    @classmethod
    def parse(cls, exercise, entry: Mapping[str, Any], where: str) -> "Config":
        hints = {f.name: f for f in dataclasses.fields(cls) if f.name != "given"}
        annotations = dict(_constructor_args(exercise.contract.constructor)) if cls.constructor else {}
        annotations.update({n: a for n, a in cls.call_args(exercise).items() if n not in hints})
        required = [n for n, f in hints.items() if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        required += [n for n, (_, has_default) in annotations.items() if not has_default and n not in hints]
        unknown, wrong = [], []
        for key, value in entry.items():
            if key in hints:
                ok = _fits(value, hints[key].type)
            elif key in annotations:
                ok = _fits(value, annotations[key][0])
            elif cls.sizes:
                ok = _fits(value, "int")
            else:
                unknown.append(key)
                continue
            if not ok:
                wrong.append(key)
        missing = [n for n in required if n not in entry]
        if unknown or missing or wrong:
            raise GradingError(exercise.id, exercise.contract.kind, sorted(unknown), missing, where, wrong)
        return cls(given=dict(entry), **{k: v for k, v in entry.items() if k in hints})

    def __getitem__(self, key: str) -> Any:
        return self.given[key]

    def __iter__(self):
        return iter(self.given)

    def __len__(self) -> int:
        return len(self.given)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.given)!r})"


@dataclass(frozen=True, eq=False, kw_only=True)
class ModuleConfig(Config):
    """A module kind's config: the constructor's arguments (each by the contract's annotation)."""

    constructor: ClassVar[bool] = True


def _constructor_args(signature: str) -> list[tuple[str, tuple[str, bool]]]:
    """(name, (annotation as text, has a default)) of each argument of a constructor written as Python."""
    if not signature:
        return []
    import ast

    args = ast.parse(f"def f({signature}): pass").body[0].args
    first_default = len(args.args) - len(args.defaults)
    return [(a.arg, (ast.unparse(a.annotation) if a.annotation is not None else "", i >= first_default))
            for i, a in enumerate(args.args)]


@dataclass(frozen=True, kw_only=True)
class Grading:
    """The ``[grading]`` keys every kind reads. A kind declares its own table as a subclass (a kind
    that extends another extends its table), with a default for every optional key; a field
    without a default is a key the exercise must give."""

    configs: tuple[dict, ...]  # the graded configs (sizes, constructor arguments)
    knobs: tuple[str, ...] = ()  # the mistakes tried, in order
    probe_configs: tuple[dict, ...] = ()  # benchmarks/mutation.py only: configs never graded
    forbidden_functions: tuple[str, ...] | dict[str, str] = ()  # torch functions the child's observer forbids
    forbidden_nodes: tuple[str, ...] = ()  # autograd nodes the judge takes for built-ins
    pairs_first: tuple[str, ...] = ()  # the exercise's own mistakes the judge pairs with each other first
    pair_limit: int | None = None  # the most pairs of knobs the judge tries (None: judge.PAIR_LIMIT)

    @classmethod
    def parse(cls, exercise) -> "Grading":
        """The exercise's ``[grading]`` as this table (top-level lists as tuples); a
        :class:`GradingError` naming the exercise and the keys for unknown or missing ones."""
        table = dict(exercise.grading)
        fields = dataclasses.fields(cls)
        unknown = sorted(set(table) - {f.name for f in fields})
        missing = [f.name for f in fields if f.name not in table
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if unknown or missing:
            raise GradingError(exercise.id, exercise.contract.kind, unknown, missing)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in table.items()})


class Channel(Protocol):
    """The child's line to the grading process: a question and its answer, as plain data."""

    def ask(self, question: dict) -> dict: ...


@dataclass
class Built:
    """The attempt as built for one config, and how its parameters were mapped to the roles."""

    attempt: Any
    mapping: dict[str, str] = field(default_factory=dict)  # role -> the attempt's layer
    by_name: bool = True
    notes: list[MappingNote] = field(default_factory=list)
    zero_bias: list[str] = field(default_factory=list)  # roles graded with a zero bias
    transposed: list[str] = field(default_factory=list)  # roles whose layer stores (in, out)
    rows: dict = field(default_factory=dict)  # roles in stacked / per-head layers: role -> [(layer, rows)]


class Kind:
    """The base of every kind: each hook with its default. Where each runs is in its docstring
    (child, parent or both); a subclass overrides what differs."""

    Grading: type[Grading] = Grading  # the kind's [grading] table (a subclass of Grading)
    Config: type[Config] = Config  # one entry of its configs (a subclass of Config)
    traits: frozenset[str] = frozenset()  # of TRAITS: which shared mistakes can happen (tests only)
    probes: frozenset[str] = frozenset()  # both: which of PROBES apply
    pair_knobs = False  # parent: its variants take two knobs at once, a tuple (two-mistake diagnoses)
    mask_fills = False  # parent: its variants take a variants.MaskFills as the fill (a fill per mask)
    outputs_apart = False  # parent: each object's outputs are named on their own (judge._apart)
    outputs_by_call = False  # parent: a case is a script of calls, one output per call (judge._output_group)
    pair_limit: int | None = None  # parent: the most pairs of knobs the judge tries (None: judge.PAIR_LIMIT)
    grads_of = "parameters"  # parent: "inputs" where the gradients graded are the float inputs
    stages: tuple[str, ...] = ATTENTION_STAGES  # parent: the observed stages the shapes panel compares

    def __init__(self, exercise, seed: int):
        self.exercise = exercise
        self.seed = seed
        self.grading = self.Grading.parse(exercise)  # both: the typed [grading]
        self.pair_limit = self.grading.pair_limit  # parent: the judge's cap on the pairs it tries (judge._pairs)
        # both: the graded configs, each typed by the kind (the probe configs are checked alike)
        self.configs: list[Config] = [self.Config.parse(exercise, c, f"configs[{i}]") for i, c in enumerate(self.grading.configs)]
        for i, c in enumerate(self.grading.probe_configs):
            self.Config.parse(exercise, c, f"probe_configs[{i}]")
        # child: built-ins the kind itself saw the attempt run (an exercise's own forbidden ops, see
        # attnprep.grader.forbidden); the child adds them to the reply's built-ins
        self.seen_builtins: set[str] = set()
        self._solution: Any = None

    # --- both ---------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        """Both: the cases of config ``ci`` (drawn from the seed: the same in the child and here).
        Exactly one is the observed case (``observe=True``): the child observes config 0's, which the
        report's panels show (wire.py rejects a reply without it), and a kind whose probes hold
        ``gradients`` runs the one marked ``grads`` (else the observed one) with gradients on."""
        raise NotImplementedError

    def config_params(self, ci: int) -> dict[str, Any]:
        """Both: the config as ids and numbers, for messages ("d_model=16, num_heads=4")."""
        return dict(self.configs[ci])

    def names(self, ci: int) -> dict[str, Any]:
        """Parent: the names the kind gives config ``ci``'s cases (a script's calls too), by their
        text: a name the child sends back as plain text (the case a call raised in, the case whose
        inputs the attempt changed) becomes the :class:`~attnprep.grader.result.Name` it is again,
        which the report says in the language."""
        return {str(c.name): c.name for c in self.cases(ci)}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        """Both: the shape of each named output of ``case``."""
        raise NotImplementedError

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Parent: sizes by the names a shape is written with in messages, ``{"B": 3, "T": 7, …}``
        (the divergence finder writes ``(3, 7, 4, 4)`` as ``(B, T, H, D)`` where sizes are unique);
        none by default (shapes are written with numbers)."""
        return {}

    def part_axis_names(self, ci: int, case: Case, part: str) -> dict[str, int]:
        """Parent: :meth:`axis_names` for one call of a script of calls (``part``, as the trail
        marks it), where that call's sizes differ; {} (the case's own) by default."""
        return {}

    # --- child --------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel: Channel) -> Built:
        """Child: the attempt's object for config ``ci`` (weights loaded); raises
        :class:`ContractError`. By default the contract's functions from the attempt's namespace."""
        return built_functions(self.exercise, namespace)

    def run(self, attempt: Any, case: Case) -> Outputs:
        """Child: call the attempt on ``case`` (a script runs several calls) and return its named
        outputs; whatever the attempt raises propagates."""
        raise NotImplementedError

    def grad_leaves(self, attempt: Any, case: Case, built: Built | None) -> tuple[Case, dict[str, torch.Tensor]]:
        """Child (and parent, for the reference, with ``attempt`` and ``built`` None): a copy of the
        case prepared for a backward pass, and the leaves whose gradients are graded, named as
        :meth:`reference_grads` names the reference's (parameters by their contract role:
        ``q_proj.weight``). Called only by a kind whose probes hold ``gradients``."""
        raise NotImplementedError

    def device_tensors(self, attempt: Any, case: Case) -> list[torch.Tensor]:
        """Child: what lives on "the device" in the emulated GPU check; by default the case's
        tensor inputs (a module adds its parameters and buffers)."""
        return [t for t in case.inputs.values() if isinstance(t, torch.Tensor)]

    def child_extra(self, attempt: Any) -> dict | None:
        """Child: kind-specific plain data measured in the child, read by :meth:`extra_checks` and
        :meth:`extra_diagnoses` (``None``: nothing)."""
        return None

    # --- parent -------------------------------------------------------------------------------

    def solution(self) -> Any:
        """Parent: the reference's objects (imported once from ``solutions/<id>.py``), by their
        contract names."""
        if self._solution is None:
            module = importlib.import_module(self.exercise.solution_module)
            self._solution = {n: getattr(module, n) for n in self.exercise.contract.objects}
        return self._solution

    def answer(self, question: dict) -> dict:
        """Parent: answer the child's question (the weight-mapping probe) with the reference, here;
        a kind that asks none answers nothing."""
        return {}

    def reference(self, ci: int, zero_bias: frozenset[str] = frozenset()) -> Runner:
        """Parent: the reference of config ``ci`` as a runner of cases (``zero_bias``: roles whose
        bias the attempt lacks, graded as zero)."""
        raise NotImplementedError

    def trail_reference(self, ci: int, zero_bias: frozenset[str] = frozenset()) -> Runner:
        """Parent: the reference driven the way the attempt is, for the divergence finder's trail
        (default: :meth:`reference`). A kind whose reference computes its expected outputs another
        way (one full forward for a script of calls, float64) gives the reference's own run here."""
        return self.reference(ci, zero_bias)

    def reference_grads(self, ci: int, zero_bias: frozenset[str], case: Case) -> tuple[Outputs, dict[str, torch.Tensor]] | None:
        """Parent: the reference's outputs on ``case`` with gradients on, and its leaves' gradients
        after the backward of the graded outputs' sum (what the child does to the attempt); None
        (the default): gradients are graded for their presence only."""
        return None

    def knobs(self) -> list[str]:
        """Parent: the mistake knobs that apply to this exercise, in the order they are tried."""
        return list(self.grading.knobs)

    def variant(self, ci: int, zero_bias: frozenset[str], knob, fill) -> Runner:
        """Parent: the reference with exactly the mistake ``knob`` (a tuple of two where
        :attr:`pair_knobs`); masks filled with ``fill`` (a variants.MaskFills where :attr:`mask_fills`)."""
        raise NotImplementedError

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        """Parent: (T_q, T_k) bool, where the reference lets queries attend, for the heat-map;
        (H, T_q, T_k) when it differs per head (the heat-map takes the head it shows). Everywhere
        by default."""
        T = case.queries.shape[1]
        return torch.ones(T, T, dtype=torch.bool)

    def extra_checks(self, extra: dict) -> list[Check]:
        """Parent: the kind's own checks from :meth:`child_extra`'s data (none by default)."""
        return []

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        """Parent: mistakes named from :meth:`child_extra`'s data (none by default)."""
        return []


NAMED = "_attnprep_named"  # the attribute of an exception that carries the mistakes a kind saw behind it


def name_mistakes(exc: BaseException, found: list[tuple[str, str, dict]]) -> None:
    """Attach named mistakes to an exception the attempt raised (the kind saw what caused it, e.g.
    a cache concatenated on the wrong axis): ``(mistake id, evidence text key, params)`` each. The
    exception still propagates as it is; the child sends them along with the error."""
    try:
        setattr(exc, NAMED, [[i, key, dict(params)] for i, key, params in found])
    except Exception:  # an exception type that takes no attributes: nothing named
        pass


def named_mistakes(exc: BaseException) -> list[list]:
    """What :func:`name_mistakes` attached, checked to be plain data (else nothing)."""
    try:
        found = vars(exc).get(NAMED) or []
    except Exception:
        return []
    plain = (str, int, float, bool, type(None))
    ok = isinstance(found, list) and all(
        isinstance(f, list) and len(f) == 3 and isinstance(f[0], str) and isinstance(f[1], str)
        and isinstance(f[2], dict) and all(isinstance(k, str) and isinstance(v, plain) for k, v in f[2].items())
        for f in found)
    return found if ok else []


def built_functions(exercise: Any, namespace: dict) -> Built:
    """A kind of functions: the contract's functions, taken from the attempt's namespace (a
    :class:`ContractError` naming the ones it lacks)."""
    objects = exercise.contract.objects
    missing = [n for n in objects if not callable(namespace.get(n))]
    if missing:
        raise ContractError("contract.missing_functions", names=", ".join(missing), count=len(missing),
                            signature=exercise.contract.forward)
    return Built({n: namespace[n] for n in objects})


def first(out: Any) -> Any:
    """The graded item of what a call returned: ``out`` or the first of ``(out, attn_weights)``."""
    return out[0] if isinstance(out, tuple) and out else out
