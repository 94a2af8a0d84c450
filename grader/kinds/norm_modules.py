"""Kind ``norm_modules``: normalisation layers as ``nn.Module`` classes, ``Cls(dim[, eps])``, whose
``forward(x)`` normalises over the last dim of an input of any rank and keeps its shape and dtype.

The contract's objects are the classes (``RMSNorm`` and ``LayerNorm``); every case runs all of them
on the same input and grades each one's output under its class name. Each class's parameters (all
of shape ``(dim,)``) are mapped to its roles by name, else by common aliases (``gamma`` / ``beta``,
``scale`` / ``shift``, the Annotated Transformer's ``a_2`` / ``b_2``), else by order, the grading
process choosing among ambiguous orders, and loaded with seeded non-trivial values. Besides float32
inputs of rank 2 to 4 (tiny values, where eps matters; an offset), the module and its input are
graded in bfloat16 and in float16 (values of a few hundred, whose squares overflow float16), to four
ulps of that dtype against the exact result, which must come back in that dtype.

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{ old, new }`` substitutions of the solution's text, each found exactly once; a sub-variant's edits
may touch one class only): a knob's variant is the edited reference's classes, built and loaded as
the attempt is and run in the case's dtype.

Exercise data (``[grading]``): ``configs`` (``dim`` and an optional ``eps``: when absent the classes
are built without it, so their defaults are graded); ``params``, each object's roles; ``eps``, the
contract's defaults (the stub's); ``knobs``, the mistakes tried, in order, and ``edits``;
``forbidden_functions``, the built-ins (read by the child's observer).
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import itertools
from dataclasses import dataclass
from typing import Any

import torch

from attnprep.grader import trace
from attnprep.grader.cases import Case, generator, low_precision, x_of
from attnprep.grader.copies import module_copy
from attnprep.grader.edits import EditedReference, knobs_of
from attnprep.grader.kinds.base import Built, Config, ContractError, Grading, Kind, first
from attnprep.grader.result import MappingNote
from attnprep.grader.tensors import decode_tensor, encode_tensor, matches

LOW_PRECISION = {"bfloat16": torch.bfloat16, "float16": torch.float16}
FP16_SCALE = 400.0  # |x| of a few hundred: x² overflows float16 (max 65504) unless upcast
TINY = 1e-3  # mean(x²) ~ 1e-6: eps (1e-6 .. 1e-3) decides the output
ALIASES = {  # role -> names other implementations give it, best first
    "weight": ("weight", "gamma", "scale", "g", "w", "a_2", "alpha", "gain"),
    "bias": ("bias", "beta", "shift", "b", "b_2", "offset"),
}


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) of four ulps at 1 of ``dtype``, against the exact (float64) result."""
    eps = torch.finfo(dtype).eps
    return 4 * eps, 4 * eps


# --- the kind -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NormGrading(Grading):
    params: dict[str, list[str]]  # object -> its roles
    eps: dict[str, float]  # object -> the contract's default eps (the stub writes it; the reference has it)
    edits: dict[str, list[dict]] = dataclasses.field(default_factory=dict)  # knob -> its {old, new} edits of the solution


@dataclass(frozen=True, eq=False, kw_only=True)
class NormConfig(Config):
    dim: int  # the normalised size
    eps: float | None = None  # passed to every object's constructor; None: each object's own default (grading.eps)


class NormModules(Kind):
    Grading = NormGrading
    Config = NormConfig
    traits = frozenset({"low_precision", "norm"})
    probes = frozenset({"gradients", "device"})  # rows are independent: equality on every case says it
    outputs_apart = True  # each object's outputs are named on their own (judge._apart)

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        grading = self.grading
        self.objects: tuple[str, ...] = tuple(exercise.contract.objects)
        self.roles: dict[str, list[str]] = {n: list(grading.params[n]) for n in self.objects}
        self.edited = EditedReference(exercise.solution_path, {k: list(v) for k, v in grading.edits.items()})
        self._variants: dict[tuple, dict[str, torch.nn.Module]] = {}  # (knobs, config, dtype) -> the variant's modules

    # --- shared -------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        dim = self.configs[ci]["dim"]
        g = generator(self.seed, ci, "norm cases")

        def draw(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, dim, generator=g)

        def case(name: str, x: torch.Tensor, **more) -> Case:
            rows = x.reshape(-1, dim).shape[0]
            return Case(name, {"x": x}, torch.ones(1, rows, dtype=torch.bool), (rows, dim), **more)

        def low(dtype_name: str) -> dict:
            return {"dtype": dtype_name, "tolerance": tolerance(LOW_PRECISION[dtype_name])}

        main = draw(2, 7)
        return [
            case(x_of("(2, 7, dim)"), main, observe=True),
            case(x_of("(5, dim)"), draw(5)),
            case(x_of("(2, 3, 4, dim)"), draw(2, 3, 4)),
            case(x_of("(2, 4, dim) * 1e-3", "tiny"), draw(2, 4) * TINY),
            case(x_of("(3, dim) + 3", "large_mean"), draw(3) * 0.5 + 3.0),
            case(low_precision("bfloat16", "(2, 7, dim)"), draw(2, 7).to(torch.bfloat16), **low("bfloat16")),
            case(low_precision("float16", "(2, 7, dim) * 400"), (draw(2, 7) * FP16_SCALE).to(torch.float16),
                 **low("float16")),
            case(x_of("(1, 1, dim)"), draw(1, 1)),
        ]

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by the names shapes are written with: ``(N, dim)``, ``(B, T, dim)``, ``(B, H, T, dim)``."""
        shape = tuple(case.inputs["x"].shape)
        names = {2: ("N", "dim"), 3: ("B", "T", "dim"), 4: ("B", "H", "T", "dim")}.get(len(shape), ())
        return {**dict(zip(names, shape)), "dim": self.configs[ci]["dim"]}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        return {name: tuple(case.inputs["x"].shape) for name in self.objects}

    def args(self, ci: int) -> list:
        c = self.configs[ci]
        return [c["dim"]] + ([c["eps"]] if "eps" in c else [])

    def role_weights(self, ci: int) -> dict[str, dict[str, torch.Tensor]]:
        """Seeded values per class and role: weights 1 ± 0.5, biases ± 0.5 (so that each shows)."""
        dim = self.configs[ci]["dim"]
        g = generator(self.seed, ci, "norm weights")
        out: dict[str, dict[str, torch.Tensor]] = {}
        for name in self.objects:
            out[name] = {}
            for role in self.roles[name]:
                noise = 0.5 * torch.randn(dim, generator=g)
                out[name][role] = 1.0 + noise if role == "weight" else noise
        return out

    # --- child --------------------------------------------------------------------------------

    def _classes(self, namespace: dict) -> dict[str, type]:
        found = [n for n, v in namespace.items() if inspect.isclass(v) and issubclass(v, torch.nn.Module)
                 and v.__module__ == namespace.get("__name__")]
        classes = {}
        for name in self.objects:
            cls = namespace.get(name)
            if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
                others = [f for f in found if f not in self.objects]
                if others:
                    raise ContractError("contract.no_class_found", name=name, found=", ".join(others))
                raise ContractError("contract.no_class", name=name)
            classes[name] = cls
        return classes

    def _options(self, name: str, module: torch.nn.Module, dim: int) -> list[dict[str, str]]:
        """Candidate maps role -> parameter name of one module: by name, aliases, then order."""
        params = [(n, p) for n, p in module.named_parameters() if _vector_shape(p) == (dim,)]
        roles = self.roles[name]
        named = {r: r for r in roles if any(n == r for n, _ in params)}
        rest_roles = [r for r in roles if r not in named]
        rest = [n for n, _ in params if n not in named.values()]
        if len(rest) < len(rest_roles):
            found = ", ".join(f"{n} {tuple(p.shape)}" for n, p in module.named_parameters()) or "none"
            raise ContractError("norm_modules.no_param", cls=name, dim=dim, roles=", ".join(roles), found=found)

        def score(role: str, param: str) -> int:
            leaf = param.rsplit(".", 1)[-1].lower()
            aliases = ALIASES.get(role, (role,))
            return aliases.index(leaf) if leaf in aliases else len(aliases)

        options = []
        for chosen in itertools.permutations(rest, len(rest_roles)):
            options.append({**named, **dict(zip(rest_roles, chosen))})
        # best aliases first, then registration order
        options.sort(key=lambda o: sum(score(r, o[r]) for r in rest_roles))
        return options

    def build(self, namespace: dict, ci: int, channel) -> Built:
        classes = self._classes(namespace)
        dim = self.configs[ci]["dim"]
        weights = self.role_weights(ci)
        modules: dict[str, torch.nn.Module] = {}
        mapping: dict[str, str] = {}
        notes: list[MappingNote] = []
        for name, cls in classes.items():
            module = cls(*self.args(ci))
            if not isinstance(module, torch.nn.Module):
                raise ContractError("contract.not_a_module", name=name)
            module.eval()
            options = self._options(name, module, dim)
            chosen = options[0]
            if len(options) > 1:  # same-shaped parameters with unknown names: the grader decides
                probe = self.cases(ci)[0]
                outputs = []
                for option in options:
                    self._load(module, option, weights[name])
                    try:
                        with torch.no_grad():
                            outputs.append(encode_tensor(first(module(probe.inputs["x"].clone()))))
                    except Exception:  # noqa: BLE001 — the graded cases show it with the user's line
                        outputs.append(None)
                answer = channel.ask({"question": "mapping", "config": ci, "object": name, "outputs": outputs})
                choice = answer.get("choice")
                if isinstance(choice, int) and 0 <= choice < len(options):
                    chosen = options[choice]
            self._load(module, chosen, weights[name])
            modules[name] = module
            for role, param in chosen.items():
                if role != param:
                    notes.append(MappingNote("by_shape", f"{name}.{role}", f"{name}.{param}"))
                mapping[f"{name}.{role}"] = f"{name}.{param}"
        by_name = not notes
        attempt = {"float32": modules}
        for dtype_name, dtype in LOW_PRECISION.items():
            attempt[dtype_name] = {n: module_copy(m).to(dtype) for n, m in modules.items()}
        return Built(attempt, mapping if not by_name else {}, by_name, notes)

    @staticmethod
    def _load(module: torch.nn.Module, option: dict[str, str], values: dict[str, torch.Tensor]) -> None:
        params = dict(module.named_parameters())
        with torch.no_grad():
            for role, param in option.items():
                params[param].copy_(values[role].view(params[param].shape))  # (1, 1, dim) gains too

    def run(self, attempt, case: Case) -> dict[str, Any]:
        modules = attempt[case.dtype]
        return {name: _marked(name, module, case.inputs["x"].clone()) for name, module in modules.items()}

    def grad_leaves(self, attempt, case: Case, built: Built | None = None):
        """The float32 modules' parameters, named by class and role (``LayerNorm.bias``) where
        mapped, else by class and their own name."""
        role_of = {param: role for role, param in (built.mapping if built is not None else {}).items()}
        leaves = {}
        for name, module in attempt["float32"].items():
            module.zero_grad(set_to_none=True)
            for n, p in module.named_parameters():
                leaf = _FlatGrad(p) if p.dim() > 1 and len(_vector_shape(p)) == 1 else p
                leaves[role_of.get(f"{name}.{n}", f"{name}.{n}")] = leaf
        return case, leaves

    def device_tensors(self, attempt, case: Case) -> list[torch.Tensor]:
        owned = [t for t in case.inputs.values() if isinstance(t, torch.Tensor)]
        for module in attempt["float32"].values():
            owned += list(module.parameters()) + list(module.buffers())
        return owned

    # --- parent -------------------------------------------------------------------------------

    def _reference_modules(self, ci: int, dtype_name: str) -> dict[str, torch.nn.Module]:
        weights = self.role_weights(ci)
        modules = {}
        for name, cls in self.solution().items():
            module = cls(*self.args(ci)).eval()
            with torch.no_grad():
                for role, value in weights[name].items():
                    if dtype_name in LOW_PRECISION:  # the module's own rounded values, computed exactly
                        value = value.to(LOW_PRECISION[dtype_name]).double()
                    getattr(module, role).data = value.clone()
            modules[name] = module
        return modules

    def reference(self, ci: int, zero_bias=frozenset()):
        per_dtype = {d: self._reference_modules(ci, d) for d in ("float32", *LOW_PRECISION)}

        def call(case: Case):
            x = case.inputs["x"]
            if case.dtype in LOW_PRECISION:
                x = x.double()  # exact: a low precision is graded to a few ulps of this
            return {name: first(m(x.clone())) for name, m in per_dtype[case.dtype].items()}

        return call

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        """The references run as the attempt is, for the divergence finder's trail: float32 modules
        with the seeded weights, converted to the case's dtype and called on its input as it is (the
        graded reference computes a low precision exactly instead, which no attempt does)."""
        weights = self.role_weights(ci)
        modules = {}
        for name, cls in self.solution().items():
            module = cls(*self.args(ci)).eval()
            with torch.no_grad():
                for role, value in weights[name].items():
                    getattr(module, role).data = value.clone()
            modules[name] = module

        def call(case: Case):
            dtype = LOW_PRECISION.get(case.dtype)
            return {name: _marked(name, copy.deepcopy(m).to(dtype) if dtype is not None else m, case.inputs["x"].clone())
                    for name, m in modules.items()}

        return call

    def reference_grads(self, ci: int, zero_bias, case: Case):
        """The references' outputs on ``case`` (float32) with gradients on, and their parameters'
        gradients after the backward of the outputs' sum (what the child does to the attempt)."""
        modules = self._reference_modules(ci, case.dtype)
        x = case.inputs["x"].double() if case.dtype in LOW_PRECISION else case.inputs["x"]
        outputs = {name: first(m(x.clone())) for name, m in modules.items()}
        total = sum((o.nan_to_num() * case.mask(n, tuple(o.shape)).to(o.dtype)).sum() for n, o in outputs.items())
        total.backward()
        grads = {f"{name}.{n}": p.grad for name, m in modules.items() for n, p in m.named_parameters() if p.grad is not None}
        return outputs, grads

    def answer(self, question: dict) -> dict:
        """Which candidate order of a class's same-shaped parameters computes the reference."""
        ci, name = int(question["config"]), question["object"]
        probe = self.cases(ci)[0]
        with torch.no_grad():
            wanted = self.reference(ci)(probe)[name]
        for index, encoded in enumerate(question["outputs"]):
            got = decode_tensor(encoded)
            if got is not None and matches(got, wanted):
                return {"choice": index}
        return {"choice": 0}

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference's classes with the edits of ``knob`` (a knob, or a tuple of knobs made
        together), built with the config's arguments and the seeded weights, and run as the attempt
        is: converted to the case's dtype and called on its input as it is."""
        knobs = knobs_of(knob)

        def call(case: Case):
            # built when first called (edits that clash raise there), then kept for the judge's next search
            key = (knobs, ci, case.dtype)
            if key not in self._variants:
                self._variants[key] = self._edited_modules(knobs, ci, case.dtype)
            return {name: first(m(case.inputs["x"].clone())) for name, m in self._variants[key].items()}

        return call

    def _edited_modules(self, knobs: tuple[str, ...], ci: int, dtype_name: str) -> dict[str, torch.nn.Module]:
        namespace = self.edited.namespace(knobs)
        weights = self.role_weights(ci)
        dtype = LOW_PRECISION.get(dtype_name)
        modules = {}
        for name in self.objects:
            module = namespace[name](*self.args(ci)).eval()
            with torch.no_grad():
                for role, value in weights[name].items():
                    getattr(module, role).data = value.clone()
            modules[name] = module.to(dtype) if dtype is not None else module
        return modules

KIND = NormModules


def _marked(name: str, module, x):
    """``module(x)``'s output, its steps marked as object ``name``'s in a divergence trail."""
    trace.mark_object(name)
    return first(module(x))


def _vector_shape(p: torch.Tensor) -> tuple[int, ...]:
    """A parameter's shape without its dims of size 1: ``(dim,)`` for a gain kept as ``(dim,)`` or in a
    broadcast-ready ``(1, 1, dim)``."""
    return tuple(n for n in p.shape if n != 1)


class _FlatGrad:
    """A gain kept as ``(1, 1, dim)``, graded as the ``(dim,)`` vector it is: its gradient flattened."""

    def __init__(self, param: torch.Tensor):
        self.param = param

    @property
    def grad(self) -> torch.Tensor | None:
        return None if self.param.grad is None else self.param.grad.reshape(-1)
