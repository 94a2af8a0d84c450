"""How to drive one kind of exercise: build the attempt and the reference, feed them a case.

A driver is chosen by the contract's ``kind`` (exercise.toml). Two kinds exist today:

- ``attention_module``: a ``nn.Module`` built from a constructor config whose
  ``forward(x, attention_mask, is_causal)`` returns ``(B, T, d_model)``; its parameters are mapped
  to the contract's roles and loaded with seeded weights (:mod:`.weights`);
- ``causal_functions``: ``causal_mask(T)`` and ``causal_attention(q, k, v, attention_mask)``.

Exercises to come (sdpa, rope, kv_cache, cross_attention …) add a driver, not a new grader.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from typing import Any, Callable

import torch

from attnprep.grader import weights as W
from attnprep.grader.cases import Case, make_cases

Call = Callable[[Case], Any]


class ContractError(Exception):
    """The attempt does not provide what the contract asks for (one line, for the user)."""


def _arg_names(signature: str) -> list[str]:
    fn = ast.parse(f"def f({signature}): pass").body[0]
    return [a.arg for a in fn.args.args]


class AttentionModuleDriver:
    token_axis = 1

    def __init__(self, exercise, seed: int):
        self.exercise = exercise
        self.seed = seed
        self.object = exercise.contract.objects[0]
        self.arg_names = _arg_names(exercise.contract.constructor)
        self.configs: list[dict] = [dict(c) for c in exercise.grading["configs"]]
        self._solution = None

    # --- shared -------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        return make_cases({"x": (self.configs[ci]["d_model"],)}, self.seed, ci)

    def args(self, ci: int) -> list:
        config = self.configs[ci]
        return [config[n] for n in self.arg_names if n in config]

    def roles(self, ci: int) -> list[W.Role]:
        return W.roles_for(self.exercise, self.configs[ci])

    def role_weights(self, ci: int) -> dict:
        return W.role_tensors(self.roles(ci), self.seed, ci)

    def expected_shape(self, case: Case, ci: int) -> tuple[int, ...]:
        B, T = case.graded.shape
        return (B, T, self.configs[ci]["d_model"])

    def describe_config(self, ci: int) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.configs[ci].items())

    @staticmethod
    def call(module, case: Case):
        return module(case.inputs["x"].clone(), None if case.attention_mask is None else case.attention_mask.clone(), case.is_causal)

    # --- reference (parent, and the child's mapping search) ----------------------------------

    def solution(self):
        if self._solution is None:
            self._solution = getattr(importlib.import_module(self.exercise.solution_module), self.object)
        return self._solution

    def reference(self, ci: int, zero_bias: set[str] = frozenset()) -> Call:
        module = self.solution()(*self.args(ci)).eval()
        weights = self.role_weights(ci)
        with torch.no_grad():
            for role, tensors in weights.items():
                sub = module.get_submodule(role)
                sub.weight.copy_(tensors["weight"])
                if "bias" in tensors:
                    sub.bias.copy_(torch.zeros_like(tensors["bias"]) if role in zero_bias else tensors["bias"])
        return lambda case: self.call(module, case)

    # --- the attempt (child) -----------------------------------------------------------------

    def build_attempt(self, namespace: dict, ci: int, matches: Callable[[Any, Any], bool]):
        """The attempt's module for config ``ci`` with role weights loaded, and its mapping."""
        cls = namespace.get(self.object)
        if not (inspect.isclass(cls) and issubclass(cls, torch.nn.Module)):
            found = [n for n, v in namespace.items() if inspect.isclass(v) and issubclass(v, torch.nn.Module) and v.__module__ == namespace.get("__name__")]
            also = f" (found {', '.join(found)})" if found else ""
            raise ContractError(f"no class {self.object}(nn.Module) in the file{also}")
        _check_forward(cls)
        args = self.args(ci)
        try:
            module = cls(*args)
        except TypeError as exc:
            if "dropout" in self.arg_names and len(args) == len(self.arg_names) and "argument" in str(exc):
                module = cls(*args[:-1])  # dropout is optional in the contract's eyes
            else:
                raise
        if not isinstance(module, torch.nn.Module):
            raise ContractError(f"{self.object}(...) did not build an nn.Module")
        module.eval()
        roles = self.roles(ci)
        layers, stray = W.layers_of(module)
        options, why = W.candidates(roles, layers)
        if not options:
            raise ContractError(f"{why}; the contract expects {_roles_text(self.exercise)}")
        weights = self.role_weights(ci)
        probe = self.cases(ci)[0]
        chosen = options[0]
        wanted: dict[frozenset, Any] = {}  # the reference's probe output per set of zero biases
        if len(options) > 1:
            for mapping in options:
                W.load(module, mapping, weights)
                try:
                    with torch.no_grad():
                        got = _first(self.call(module, probe))
                except Exception:
                    continue
                key = frozenset(mapping.zero_bias)
                if key not in wanted:
                    wanted[key] = self.reference(ci, key)(probe)
                if matches(got, wanted[key]):
                    chosen = mapping
                    break
        extra = [r for r in roles if r.bias is None and W.layer_named(layers, chosen.layers[r.name]).bias is not None]
        if extra:
            r = extra[0]
            p = next(p for p in self.exercise.contract.params if p.name == r.name)
            raise ContractError(f"{chosen.layers[r.name]} has a bias, but the contract's {r.name} is {p.describe()}: pass bias=False")
        W.load(module, chosen, weights)
        notes = list(chosen.notes) + [f"{p} has no role in the contract: given seeded values" for p in stray]
        if not chosen.by_name:
            notes = [f"took {layer!r} for {role} (by shape)" for role, layer in chosen.layers.items() if role != layer] + notes
        info = {"mapping": chosen.layers, "by_name": chosen.by_name, "notes": notes, "zero_bias": sorted(chosen.zero_bias)}
        return module, info

    def attempt_call(self, module) -> Call:
        return lambda case: self.call(module, case)


class CausalFunctionsDriver:
    token_axis = 2

    def __init__(self, exercise, seed: int):
        self.exercise = exercise
        self.seed = seed
        self.configs: list[dict] = [dict(c) for c in exercise.grading["configs"]]
        self._solution = None

    def cases(self, ci: int) -> list[Case]:
        c = self.configs[ci]
        shape = (c["heads"], c["dim"])
        # causal_attention is causal by definition: only the causal cases (and their perturbations)
        cases = [c for c in make_cases({"q": shape, "k": shape, "v": shape}, self.seed, ci, left_padding=True) if c.is_causal]
        for case in cases:  # the functions take (B, H, T, D)
            case.inputs = {k: v.transpose(1, 2).contiguous() for k, v in case.inputs.items()}
        return cases

    def roles(self, ci: int) -> list:
        return []

    def expected_shape(self, case: Case, ci: int) -> tuple[int, ...]:
        B, T = case.graded.shape
        c = self.configs[ci]
        return (B, c["heads"], T, c["dim"])

    def describe_config(self, ci: int) -> str:
        c = self.configs[ci]
        return f"q, k, v of shape (B, {c['heads']}, T, {c['dim']})"

    @staticmethod
    def call(functions, case: Case):
        i = case.inputs
        mask = None if case.attention_mask is None else case.attention_mask.clone()
        return functions["causal_attention"](i["q"].clone(), i["k"].clone(), i["v"].clone(), mask)

    def solution(self):
        if self._solution is None:
            module = importlib.import_module(self.exercise.solution_module)
            self._solution = {n: getattr(module, n) for n in self.exercise.contract.objects}
        return self._solution

    def reference(self, ci: int, zero_bias=frozenset()) -> Call:
        functions = self.solution()
        return lambda case: self.call(functions, case)

    def build_attempt(self, namespace: dict, ci: int, matches):
        missing = [n for n in self.exercise.contract.objects if not callable(namespace.get(n))]
        if missing:
            raise ContractError(f"missing function{'s' if len(missing) > 1 else ''} {', '.join(missing)}: the contract is {self.exercise.contract.forward}")
        return {n: namespace[n] for n in self.exercise.contract.objects}, {"mapping": {}, "by_name": True, "notes": [], "zero_bias": []}

    def attempt_call(self, functions) -> Call:
        return lambda case: self.call(functions, case)

    MASK_SIZES = (1, 4, 7)

    def extra_child(self, functions) -> dict:
        """causal_mask on its own: values for a few sizes, and whether it honours ``device``."""
        from attnprep.grader.observe import DeviceTracker

        out = {}
        for T in self.MASK_SIZES:
            m = functions["causal_mask"](T)
            out[str(T)] = {"type": type(m).__name__, "shape": list(getattr(m, "shape", [])),
                           "dtype": str(getattr(m, "dtype", "")), "values": m.int().tolist() if isinstance(m, torch.Tensor) else None}
        tracker = DeviceTracker([], "")
        with tracker:
            m = functions["causal_mask"](5, device=torch.device("cpu"))
        out["device_ok"] = isinstance(m, torch.Tensor) and id(m) in tracker.on_device
        return out

    def extra_checks(self, data: dict):
        from attnprep.grader.result import Check

        problems = []
        for T in self.MASK_SIZES:
            got = data.get(str(T), {})
            want = torch.tril(torch.ones(T, T, dtype=torch.int64)).tolist()
            if got.get("type") != "Tensor" or got.get("shape") != [T, T]:
                problems.append(f"causal_mask({T}) returned {got.get('type')} of shape {tuple(got.get('shape') or ())}, expected a ({T}, {T}) bool tensor")
            elif got.get("dtype") != "torch.bool":
                problems.append(f"causal_mask({T}) has dtype {got['dtype']}, expected torch.bool")
            elif got.get("values") != want:
                problems.append(f"causal_mask({T}) is not True exactly where j <= i")
        checks = [Check("causal_mask", not problems, problems[0] if problems else "bool (T, T), True where j <= i")]
        checks.append(Check("causal_mask device", bool(data.get("device_ok")),
                            "honours its device argument" if data.get("device_ok") else "ignores its device argument: pass device=device to the factory"))
        return checks

    def extra_diagnoses(self, data: dict) -> list[tuple[str, str]]:
        got = data.get(str(max(self.MASK_SIZES)), {})
        T = max(self.MASK_SIZES)
        if got.get("values") == torch.triu(torch.ones(T, T, dtype=torch.int64), diagonal=1).tolist():
            return [("causal_mask_inverted", f"causal_mask({T}) is True above the diagonal (the blocked positions)")]
        return []


def _first(out):
    return out[0] if isinstance(out, tuple) and out else out


def _roles_text(exercise) -> str:
    return ", ".join(f"{p.name}: {p.describe()}" for p in exercise.contract.params)


def _check_forward(cls) -> None:
    try:
        sig = inspect.signature(cls.forward)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())[1:]  # drop self
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 3:
        names = ", ".join(p.name for p in params)
        raise ContractError(f"forward({names}) must accept (x, attention_mask=None, is_causal=False)")


DRIVERS = {"attention_module": AttentionModuleDriver, "causal_functions": CausalFunctionsDriver}


def driver_for(exercise, seed: int):
    return DRIVERS[exercise.contract.kind](exercise, seed)
