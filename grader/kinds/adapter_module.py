"""Kind ``adapter_module``: a :mod:`.plain_module` (one ``nn.Module``, ``forward(x)`` token by token,
mistakes as named edits of the reference) graded beyond its outputs, three capabilities declared as
data in ``[grading]`` (a LoRA layer needs all three):

- ``methods``: methods besides ``forward`` that take nothing and return a module (LoRA's
  ``merged()``, a plain ``nn.Linear``), each called after the weights are loaded and applied to the
  float32 cases' ``x``; its output is graded as an output named by the method, against the
  reference's same method (and its mistakes are edits of it). ``method_types`` may name the class
  the returned module must be (``{ merged = "Linear" }``, a ``torch.nn`` class): another is a failed
  check.
- ``frozen``: contract roles whose parameters must receive no gradient (``roles``): after the
  backward of the gradients probe, one that received a gradient or still has ``requires_grad``
  fails the ``frozen`` check (their parameters are left out of the graded gradients), and a ``mistake`` is named when one of the
  parameters of ``named_by`` did (``["weight"]``: a trainable bias alone fails, unnamed).
- ``init``: the attempt's own initialisation, read when its constructor returns and before the
  grader loads its seeded weights: roles whose weight must be all zero (``zero``) and roles whose
  weight must not be (``nonzero``). Either wrong fails the ``initialisation`` check and names
  ``mistake``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from attnprep.grader import trace
from attnprep.grader.cases import Case
from attnprep.grader.copies import module_copy
from attnprep.grader.kinds import plain_module
from attnprep.grader.kinds.base import Built, ContractError, first
from attnprep.grader.result import Check, Diagnosis, msg
from attnprep.grader.weights import params_of


@dataclass(frozen=True, kw_only=True)
class AdapterGrading(plain_module.PlainGrading):
    methods: tuple[str, ...] = ()  # methods besides forward that return a module, graded too
    method_types: dict[str, str] = field(default_factory=dict)  # method -> the torch.nn class it must return
    frozen: dict = field(default_factory=dict)  # roles, mistake, named_by: parameters that must not train
    init: dict = field(default_factory=dict)  # zero, nonzero, mistake: the attempt's own initialisation


class AdapterModule(plain_module.PlainModule):
    Grading = AdapterGrading
    outputs_apart = True  # forward's output and each method's named on their own (judge._apart)

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        grading = self.grading
        self.methods: list[str] = list(grading.methods)
        self.method_types: dict[str, str] = dict(grading.method_types)
        self.frozen: dict = dict(grading.frozen)
        self.init: dict = dict(grading.init)
        self._constructed: dict[str, tuple[bool, bool]] = {}  # child: parameter -> (all zero, requires_grad)
        self._built: dict[int, tuple] = {}  # child: id(attempt) -> (the attempt, its mapping, its roles' zero init)
        self._gradient_case: Case | None = None  # child: the case run with gradients on (forward only)

    # --- shared -------------------------------------------------------------------------------

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        shapes = super().expected_shapes(ci, case)
        if case.dtype == "float32":  # a merged layer is graded at full precision only
            shapes.update((name, shapes["out"]) for name in self.methods)
        return shapes

    def _outputs(self, module, case: Case, x: torch.Tensor) -> dict[str, Any]:
        outputs = {"out": first(module(x))}
        if case.dtype == "float32" and case is not self._gradient_case:  # the backward is of forward alone
            for name in self.methods:
                made = self._made(module, name)
                outputs[name] = first(made(x))
                if trace.tracing():  # the trail: the returned module's own tensors, which the file made
                    outputs.update((f"{name}().{leaf}", p) for leaf, p in made.named_parameters())
        return outputs

    def _role_tensors(self, module, owner) -> list[torch.Tensor]:
        """``owner``'s (a copy of ``module``) weights and biases of the contract's roles, in the
        contract's order: the same sources for the attempt's trail and the reference's."""
        built = self._built.get(id(module), (None, None))[1]
        names = {id(p): n for n, p in module.named_parameters()}
        copied = dict(owner.named_parameters())
        found = []
        for role in [p.name for p in self.exercise.contract.params]:
            try:
                params = self._role_params(module, built, role) if built is not None else dict(
                    zip(("weight", "bias"), params_of(module, role)[:2]))
            except (KeyError, AttributeError):
                continue
            found += [copied[names[id(p)]] for leaf in ("weight", "bias")
                      if (p := params.get(leaf)) is not None and names.get(id(p)) in copied]
        return found

    def _made(self, module, name: str):
        """What ``module.name()`` returns, called on a copy: a method that merges in place (PEFT's
        merge()) and returns the updated base leaves the graded module as it was."""
        try:
            owner = module_copy(module)
        except Exception:  # noqa: BLE001 — a module that cannot be copied is called as it is
            owner = module
        if trace.tracing():  # its steps computed from the weights, for the divergence finder
            trace.add_sources(self._role_tensors(module, owner))
        return getattr(owner, name)()

    # --- child --------------------------------------------------------------------------------

    def constructed(self, module) -> None:
        self._constructed = {name: (bool((p.detach() == 0).all()), bool(p.requires_grad))
                             for name, p in module.named_parameters()}

    def build(self, namespace: dict, ci: int, channel) -> Built:
        built = super().build(namespace, ci, channel)
        module = built.attempt
        missing = [name for name in self.methods if not callable(getattr(module, name, None))]
        if missing:
            raise ContractError("adapter_module.no_method", name=self.object, method=missing[0])
        names = {id(p): n for n, p in module.named_parameters()}
        zero = {}  # role -> its weight was all zero as the constructor left it
        for role in [*self.init.get("zero", []), *self.init.get("nonzero", [])]:
            weight = self._role_params(module, built, role).get("weight")
            state = self._constructed.get(names.get(id(weight), ""))
            if state is not None:
                zero[role] = state[0]
        self._built[id(module)] = (module, built, zero)
        return built

    def run(self, attempt, case: Case) -> dict[str, Any]:
        module = attempt
        if case.dtype != "float32":
            if self._low is None or self._low[0] is not attempt:
                self._low = (attempt, module_copy(attempt).to(getattr(torch, case.dtype)))
            module = self._low[1]
        return self._outputs(module, case, case.inputs["x"])

    def _role_params(self, attempt, built: Built, role: str) -> dict[str, torch.Tensor]:
        """The attempt's parameters of ``role`` by their leaf (``weight``, ``bias``)."""
        found: dict[str, torch.Tensor] = {}
        for layer in ([name for name, _ in built.rows[role]] if role in built.rows else [built.mapping.get(role)]):
            if layer is None:
                continue
            weight, bias, _ = params_of(attempt, layer)
            found.setdefault("weight", weight)
            if bias is not None:
                found.setdefault("bias", bias)
        return found

    def grad_leaves(self, attempt, case: Case, built: Built):
        """The graded leaves without the frozen roles' parameters (their check is ``frozen``)."""
        case, leaves = super().grad_leaves(attempt, case, built)
        self._gradient_case = case
        frozen = tuple(f"{role}." for role in self.frozen.get("roles", []))
        return case, {name: p for name, p in leaves.items() if not name.startswith(frozen)}

    def child_extra(self, attempt) -> dict | None:
        """After the gradients probe: which parameters of the frozen roles can train, the
        zero / non-zero roles as the constructor left them, and the type each method returns."""
        if id(attempt) not in self._built:
            return None
        _, built, zero = self._built[id(attempt)]
        grads = {f"{role}.{leaf}": p.grad is not None or p.requires_grad  # trainable, or reached by a gradient
                 for role in self.frozen.get("roles", []) for leaf, p in self._role_params(attempt, built, role).items()}
        types = {}
        for name in self.methods:
            with torch.no_grad():
                made = self._made(attempt, name)
            types[name] = [type(made).__module__, type(made).__name__]
        layers = {role: built.mapping.get(role) for role in [*self.init.get("zero", []), *self.init.get("nonzero", []),
                                                          *self.frozen.get("roles", [])]}
        return {"grads": grads, "zero": zero, "types": types, "layers": {r: n for r, n in layers.items() if n}}

    # --- parent -------------------------------------------------------------------------------

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        module = self._module(self.solution(), ci, zero_bias, "float32")

        def call(case: Case):
            m = module if case.dtype == "float32" else copy.deepcopy(module).to(getattr(torch, case.dtype))
            return self._outputs(m, case, case.inputs["x"])

        return call

    def _problems(self, extra: dict) -> dict[str, tuple[Any, str | None]]:
        """Per check id: the failing message and the mistake it names (None: nothing failed)."""
        found: dict[str, tuple[Any, str | None]] = {}
        trained = sorted(name for name, got in (extra.get("grads") or {}).items() if got)
        if trained:
            named_by = tuple(f".{leaf}" for leaf in self.frozen.get("named_by", ["weight", "bias"]))
            named = self.frozen.get("mistake") if any(n.endswith(named_by) for n in trained) else None
            role = trained[0].rsplit(".", 1)[0]
            found["frozen"] = (msg("adapter_module.frozen_bad", names=", ".join(trained), role=role,
                                   layer=(extra.get("layers") or {}).get(role, "")), named)
        zero = extra.get("zero") or {}
        wrong = [r for r in self.init.get("zero", []) if zero.get(r) is False] + \
                [r for r in self.init.get("nonzero", []) if zero.get(r) is True]
        if wrong:
            role = wrong[0]
            key = "adapter_module.init_not_zero" if role in self.init.get("zero", []) else "adapter_module.init_zero"
            found["initialisation"] = (msg(key, role=role, layer=(extra.get("layers") or {}).get(role, "")),
                                       self.init.get("mistake"))
        for name, wanted in self.method_types.items():
            got = (extra.get("types") or {}).get(name)
            if got and not (got[0].startswith("torch.nn") and got[1] == wanted):
                found["method"] = (msg("adapter_module.method_type", method=name, type=got[1], expected=wanted), None)
        return found

    def extra_checks(self, extra: dict) -> list[Check]:
        problems = self._problems(extra)
        checks = []
        if self.frozen.get("roles"):
            bad = problems.get("frozen")
            checks.append(Check("frozen", bad is None, bad[0] if bad else msg("adapter_module.frozen_ok",
                                                                               roles=", ".join(self.frozen["roles"]))))
        if self.init.get("zero") or self.init.get("nonzero"):
            bad = problems.get("initialisation")
            checks.append(Check("initialisation", bad is None, bad[0] if bad else msg(
                "adapter_module.init_ok", zero=", ".join(self.init.get("zero", [])) or "-",
                nonzero=", ".join(self.init.get("nonzero", [])) or "-")))
        if self.method_types:
            bad = problems.get("method")
            checks.append(Check("method", bad is None, bad[0] if bad else msg(
                "adapter_module.method_ok", methods=", ".join(f"{m}()" for m in self.method_types))))
        return checks

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        return [Diagnosis(named, (message,)) for message, named in self._problems(extra).values() if named]


KIND = AdapterModule
