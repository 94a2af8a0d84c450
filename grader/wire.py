"""The typed wire between the child and the grading process.

The child builds these dataclasses and sends them as plain JSON (``to_data``); the grading process
decodes the reply once (``Reply.decode``), checking every field's type, and then checks that it is
complete for the kind (every config, case and probe asked for). Anything malformed raises
:class:`WireError`, which the engine turns into an ``error`` verdict: nothing downstream reads a
nested dict with ``.get`` defaults. Tensors travel encoded by :mod:`attnprep.grader.tensors`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


class WireError(ValueError):
    """The child's reply is not what a child of this grader sends: a text key of the [wire] table
    (attnprep/texts) and its parameters, said in the report's language."""

    def __init__(self, text: str, /, **params: Any):
        super().__init__(text)
        self.key, self.params = "wire." + text, params


def to_data(obj: Any) -> Any:
    """Dataclasses as dicts, all the way down; leaves shared, not copied (``dataclasses.asdict``
    deep-copies every float of every encoded tensor, and the result only goes to ``json.dumps``)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list):
        return [to_data(o) for o in obj]
    if isinstance(obj, tuple):
        return type(obj)(*map(to_data, obj)) if hasattr(obj, "_fields") else tuple(map(to_data, obj))
    if isinstance(obj, dict):
        return {to_data(k): to_data(v) for k, v in obj.items()}
    return obj


# --- decoding helpers ----------------------------------------------------------------------------


def _field(data: Any, key: str, types, where: str, optional: bool = False):
    if not isinstance(data, dict):
        raise WireError("not_object", where=where)
    if key not in data:
        if optional:
            return None
        raise WireError("missing", where=where, field=key)
    value = data[key]
    if value is None and optional:
        return None
    if types is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, types) or (types is int and isinstance(value, bool)):
        raise WireError("wrong_type", where=where, field=key)
    return value


def _strs(values: Any, where: str) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise WireError("not_strings", where=where)
    return list(values)


def _params(data: Any, where: str) -> dict:
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise WireError("not_params", where=where)
    for value in data.values():
        if not isinstance(value, (str, int, float, bool, type(None))):
            raise WireError("param_not_plain", where=where)
    return data


def _encoded(value: Any, where: str) -> dict:
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise WireError("not_encoded", where=where)
    return value


# --- the reply -----------------------------------------------------------------------------------


@dataclass
class Problem:
    """An error or a contract failure: a text key, its parameters, the user's frames."""

    kind: str  # "exception", "exit", "memory", "contract", "blank"
    key: str
    params: dict = field(default_factory=dict)
    traceback: str = ""
    named: list = field(default_factory=list)  # [mistake id, text key, params]: what the kind saw behind it

    @classmethod
    def decode(cls, data: Any, where: str) -> "Problem":
        named = _field(data, "named", list, where, optional=True) or []
        for n in named:
            if not (isinstance(n, list) and len(n) == 3 and isinstance(n[0], str) and isinstance(n[1], str)):
                raise WireError("bad_mistake", where=where)
            _params(n[2], where)
        return cls(_field(data, "kind", str, where), _field(data, "key", str, where),
                   _params(_field(data, "params", dict, where), where), _field(data, "traceback", str, where), named)


@dataclass
class Observed:
    softmax_dims: list = field(default_factory=list)  # [dim, ndim] of each softmax call
    shapes: dict = field(default_factory=dict)  # stage -> shape
    probs: dict | None = None  # encoded tensor
    scores: dict | None = None
    dropout_in_eval: bool = False
    discarded_fills: int = 0  # masked_fill results nothing used

    @classmethod
    def decode(cls, data: Any, where: str) -> "Observed":
        dims = _field(data, "softmax_dims", list, where)
        for d in dims:
            if not (isinstance(d, list) and len(d) == 2):
                raise WireError("bad_softmax_dims", where=where)
        shapes = _field(data, "shapes", dict, where)
        for shape in shapes.values():
            if not (isinstance(shape, list) and all(isinstance(n, int) for n in shape)):
                raise WireError("bad_shapes", where=where)
        probs = _field(data, "probs", dict, where, optional=True)
        scores = _field(data, "scores", dict, where, optional=True)
        return cls(dims, shapes, probs and _encoded(probs, where), scores and _encoded(scores, where),
                   _field(data, "dropout_in_eval", bool, where), _field(data, "discarded_fills", int, where))


@dataclass
class Probe:
    """A generic probe run in the child (gradients, device): ok / failed / could not run."""

    ok: bool | None
    key: str = ""
    params: dict = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # gradients: the leaves that got none

    @classmethod
    def decode(cls, data: Any, where: str) -> "Probe":
        ok = _field(data, "ok", bool, where, optional=True)
        return cls(ok, _field(data, "key", str, where), _params(_field(data, "params", dict, where), where),
                   _strs(_field(data, "names", list, where), where))


def _grad_values(data: dict, where: str) -> dict:
    for part in data:
        if part not in ("outputs", "grads") or not isinstance(data[part], dict):
            raise WireError("bad_grads", where=where)
        for value in data[part].values():
            _encoded(value, where)
    return data


@dataclass
class ConfigReply:
    index: int
    runs: dict = field(default_factory=dict)  # case -> output name -> encoded
    mapping: dict = field(default_factory=dict)  # role -> layer
    by_name: bool = True
    notes: list = field(default_factory=list)  # [kind, role, layer]
    zero_bias: list = field(default_factory=list)
    observed: Observed | None = None
    pictures: dict = field(default_factory=dict)  # case -> encoded probabilities
    grads: Probe | None = None
    device: Probe | None = None
    extra: dict | None = None
    ops: list = field(default_factory=list)  # class names of the autograd graph's nodes (what ran)
    grad_values: dict = field(default_factory=dict)  # {"outputs": {name: enc}, "grads": {leaf: enc}}
    mutated: list = field(default_factory=list)  # [case, input name, …] where the attempt changed its inputs

    @classmethod
    def decode(cls, data: Any, where: str) -> "ConfigReply":
        runs = _field(data, "runs", dict, where)
        for case, outputs in runs.items():
            if not isinstance(outputs, dict):
                raise WireError("bad_outputs", where=where, case=case)
            for value in outputs.values():
                _encoded(value, where)
        mapping = _field(data, "mapping", dict, where)
        if not all(isinstance(v, str) for v in mapping.values()):
            raise WireError("bad_mapping", where=where)
        notes = _field(data, "notes", list, where)
        for note in notes:
            if not (isinstance(note, list) and len(note) == 3 and all(isinstance(n, str) for n in note)):
                raise WireError("bad_mapping_note", where=where)
        observed = _field(data, "observed", dict, where, optional=True)
        pictures = _field(data, "pictures", dict, where)
        for value in pictures.values():
            _encoded(value, where)
        grads = _field(data, "grads", dict, where, optional=True)
        device = _field(data, "device", dict, where, optional=True)
        return cls(
            index=_field(data, "index", int, where), runs=runs, mapping=mapping,
            by_name=_field(data, "by_name", bool, where), notes=notes,
            zero_bias=_strs(_field(data, "zero_bias", list, where), where),
            observed=None if observed is None else Observed.decode(observed, where),
            pictures=pictures,
            grads=None if grads is None else Probe.decode(grads, where),
            device=None if device is None else Probe.decode(device, where),
            extra=_field(data, "extra", dict, where, optional=True),
            ops=_strs(_field(data, "ops", list, where), where),
            grad_values=_grad_values(_field(data, "grad_values", dict, where), where),
            mutated=[_strs(m, where) for m in _field(data, "mutated", list, where)],
        )


@dataclass
class Reply:
    configs: list[ConfigReply] = field(default_factory=list)
    builtins: list[str] = field(default_factory=list)
    problem: Problem | None = None  # the attempt raised, exited, or does not fit the contract
    problem_config: int | None = None  # during which config
    internal: str | None = None  # attnprep's own failure in the child
    traceback: str = ""

    @classmethod
    def decode(cls, data: Any) -> "Reply":
        if not isinstance(data, dict):
            raise WireError("reply_not_object")
        configs = _field(data, "configs", list, "reply")
        problem = _field(data, "problem", dict, "reply", optional=True)
        return cls(
            configs=[ConfigReply.decode(c, f"config {i}") for i, c in enumerate(configs)],
            builtins=_strs(_field(data, "builtins", list, "reply"), "builtins"),
            problem=None if problem is None else Problem.decode(problem, "problem"),
            problem_config=_field(data, "problem_config", int, "reply", optional=True),
            internal=_field(data, "internal", str, "reply", optional=True),
            traceback=_field(data, "traceback", str, "reply"),
        )

    def say_names(self, names) -> None:
        """The child's plain text that is one of the grader's names (a case, a call of a script, the
        stage a raise happened in: "forward (padded)") as that :class:`~attnprep.grader.result.Name`
        again (a str too), which the report says in the language. ``names(ci)``: the kind's names of
        config ``ci`` by their text (:meth:`~attnprep.grader.kinds.base.Kind.names`), asked only
        when there is something to name."""
        from attnprep.grader.result import Name

        def named(value, known: dict):
            if not isinstance(value, str):
                return value
            if value in known:
                return known[value]
            if value.startswith("forward (") and value.endswith(")") and value[9:-1] in known:
                return Name(value, "name.forward_on", case=known[value[9:-1]])
            return value

        from attnprep.grader.result import REFERENCE_SOLUTION

        self.builtins = [REFERENCE_SOLUTION if b == REFERENCE_SOLUTION else b for b in self.builtins]
        if self.problem is not None:
            known = names(self.problem_config or 0)
            self.problem.params = {k: named(v, known) for k, v in self.problem.params.items()}
            self.problem.named = [[i, key, {k: named(v, known) for k, v in params.items()}]
                                  for i, key, params in self.problem.named]
        for c in self.configs:
            if c.mutated:
                known = names(c.index)
                c.mutated = [[named(m[0], known), *m[1:]] if m else m for m in c.mutated]

    def check_complete(self, kind) -> None:
        """Every config, case and probe the kind asked for is there (the attempt ran to the end)."""
        if self.problem is not None or self.internal is not None or self.builtins:
            return
        if [c.index for c in self.configs] != list(range(len(kind.configs))):
            raise WireError("configs_missing", got=", ".join(str(c.index) for c in self.configs), n=len(kind.configs))
        for c in self.configs:
            for case in kind.cases(c.index):
                if case.name not in c.runs:
                    raise WireError("case_missing", config=c.index, case=case.name)
            if "gradients" in kind.probes and c.grads is None:
                raise WireError("grads_missing", config=c.index)
            if c.index == 0 and c.observed is None:
                raise WireError("observation_missing", config=0)
