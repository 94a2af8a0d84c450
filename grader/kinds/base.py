"""The one interface every exercise kind implements.

A kind is how one shape of exercise is driven: what the attempt provides (a module, functions, a
cached module …), its cases, how to call it (one call or a script of calls), the reference and its
mistaken variants, which generic probes apply, and its own checks. The pipeline (``engine``,
``child``, ``judge``) and the report only ever talk to a :class:`Kind`; what is specific to one
exercise (its configs, which knobs apply, probe configs, the model a kind computes) is data in its
``exercises/<id>/exercise.toml``.

A kind is a module of :mod:`attnprep.grader.kinds` named by ``contract.kind`` that defines
``KIND``, a class built as ``KIND(exercise, seed)`` (see :func:`attnprep.grader.kinds.kind_for`).

Where it runs:

- *child* (the forked process that imports the attempt; the reference never enters it):
  :meth:`Kind.build`, :meth:`Kind.run`, :meth:`Kind.grad_leaves`, :meth:`Kind.device_tensors`,
  :meth:`Kind.child_extra`;
- *parent* (the grading process): :meth:`Kind.reference`, :meth:`Kind.reference_grads`, :meth:`Kind.variant`,
  :meth:`Kind.answer`, :meth:`Kind.allowed`, :meth:`Kind.extra_checks`,
  :meth:`Kind.extra_diagnoses`;
- both: :attr:`configs`, :meth:`cases`, :meth:`expected_shapes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import torch

from attnprep.grader.cases import Case
from attnprep.grader.result import Check, Diagnosis, MappingNote

Outputs = dict[str, Any]  # named outputs of one case: {"out": tensor} or a script's {"step 1": …}
Runner = Callable[[Case], Outputs]

# The generic probes a kind may ask for (the judge runs them; the names are check ids).
PROBES = ("causality", "padding", "batch", "eval", "gradients", "device", "softmax_rows")


class ContractError(Exception):
    """The attempt does not provide what the contract asks for; carries a text key and params."""

    def __init__(self, key: str, **params: Any):
        super().__init__(key)
        self.key = key
        self.params = params


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


class Kind(Protocol):
    exercise: Any
    seed: int
    configs: list[dict]
    probes: frozenset[str]  # which of PROBES apply
    token_axis: int  # the token axis of the main output (heat-map rows, gradients' weighting)
    pair_knobs: bool  # optional: its variants accept two knobs at once, a tuple (two-mistake diagnoses)
    mask_fills: bool  # optional: its variants take a variants.MaskFills as the fill (a fill per mask)
    grads_of: str  # optional: "inputs" where the exercise has no parameters (default "parameters")
    # optional: built-ins the kind itself saw the attempt run (an exercise's own forbidden ops, see
    # attnprep.grader.forbidden), filled in the child; the child adds them to the reply's built-ins
    seen_builtins: set[str]

    def cases(self, ci: int) -> list[Case]: ...

    def config_params(self, ci: int) -> dict[str, Any]:
        """The config as ids and numbers, for messages ("d_model=16, num_heads=4")."""

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]: ...

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by the names a shape is written with in messages, ``{"B": 3, "T": 7, "H": 4, …}``
        (the divergence finder writes ``(3, 7, 4, 4)`` as ``(B, T, H, D)`` where sizes are unique)."""

    # --- child ---------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel: Channel) -> Built:
        """The attempt's object for config ``ci`` (weights loaded); raises :class:`ContractError`."""

    def run(self, attempt: Any, case: Case) -> Outputs:
        """Call the attempt on ``case`` (a script runs several calls) and return its named outputs;
        whatever the attempt raises propagates."""

    def grad_leaves(self, attempt: Any, case: Case, built: Built) -> tuple[Case, dict[str, torch.Tensor]]:
        """A copy of the case prepared for a backward pass, and the leaves whose gradients are
        graded, named as :meth:`reference_grads` names the reference's (parameters by their
        contract role: ``q_proj.weight``)."""

    def device_tensors(self, attempt: Any, case: Case) -> list[torch.Tensor]:
        """What lives on "the device" in the emulated GPU check: inputs, parameters, buffers."""

    def child_extra(self, attempt: Any) -> dict | None:
        """Kind-specific plain data measured in the child (``None``: nothing)."""

    # --- parent --------------------------------------------------------------------------------

    def answer(self, question: dict) -> dict:
        """Answer the child's question (the weight-mapping probe) with the reference, here."""

    def reference(self, ci: int, zero_bias: frozenset[str] = frozenset()) -> Runner: ...

    def trail_reference(self, ci: int, zero_bias: frozenset[str] = frozenset()) -> Runner:
        """Optional: the reference driven the way the attempt is, for the divergence finder's trail
        (default: :meth:`reference`). A kind whose reference computes its expected outputs another
        way (one full forward for a script of calls) gives the reference's own script here."""

    def reference_grads(self, ci: int, zero_bias: frozenset[str], case: Case) -> tuple[Outputs, dict[str, torch.Tensor]]:
        """The reference's outputs on ``case`` with gradients on, and its leaves' gradients after
        the backward of the graded outputs' sum (what the child does to the attempt)."""

    def knobs(self) -> list[str]:
        """The mistake knobs that apply to this exercise, in the order they are tried."""

    def variant(self, ci: int, zero_bias: frozenset[str], knob: str, fill: float) -> Runner:
        """The reference with exactly the mistake ``knob``; masks filled with ``fill``."""

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        """(T_q, T_k) bool: where the reference lets queries attend, for the heat-map; (H, T_q, T_k)
        when it differs per head (the heat-map takes the head it shows)."""

    def extra_checks(self, extra: dict) -> list[Check]: ...

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]: ...


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
