"""Kind ``rope_functions``: a RoPE cache function and a function that applies it.

The contract's objects are ``[cache_function, apply_function]``: ``cache(seq_len, head_dim,
theta=…, device=None)`` returns ``(cos, sin)``, each float32 ``(seq_len, head_dim)``, and
``apply(x, cos, sin, positions=None)`` rotates ``x (B, H, T, D)`` by the rows ``positions`` of the
cache (default ``arange(T)``). The cache is graded on its own (outputs ``cos``, ``sin``); the apply
function is graded with the reference's cache (output ``out``), so a slip in one never hides or
fakes a slip in the other: a prefill, a chunk and a decode step at absolute positions, a
left-padded batch with per-sample positions, and a bfloat16 ``x`` with float32 ``cos`` / ``sin``
(graded to a few bfloat16 ulps against the exact result, which must come back in bfloat16).
Beyond equality, the attempt's own two functions must rotate: ``q_m · k_n`` depends on ``m - n``
only, and norms are kept.

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{ old, new }`` substitutions of the solution's text, each found exactly once); a knob's variant is
the edited reference called as the attempt is, and two knobs at once are both edits made together.

Exercise data (``[grading]``): ``configs`` (``head_dim``, ``heads``, ``cache_len`` and an optional
``theta``: when absent the cache function is called without it, so its default is graded);
``default_theta``, the contract's default; ``knobs``, the mistakes tried, in order, and ``edits``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import torch

from attnprep.grader.cases import Case, generator
from attnprep.grader.edits import EditedReference, knobs_of
from attnprep.grader.kinds.base import Built, Config, ContractError, Grading, Kind, built_functions, first
from attnprep.grader.result import Check, Diagnosis, Name, msg

RELATIVE_LEN = 12  # positions of the relative-position check
RELATIVE_TOL = 1e-4  # relative to |q|·|k|: float32 angles of a dozen positions are far closer


def low_precision_tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) of four ulps at 1 of ``dtype``, against the exact (float64) result."""
    eps = torch.finfo(dtype).eps
    return 4 * eps, 4 * eps


# --- the kind -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RopeGrading(Grading):
    default_theta: float = 10000.0  # the contract's default theta
    edits: dict[str, list[dict]] = dataclasses.field(default_factory=dict)  # knob -> its {old, new} edits of the solution


@dataclass(frozen=True, eq=False, kw_only=True)
class RopeConfig(Config):
    head_dim: int
    heads: int
    cache_len: int  # the rows of the cos / sin cache
    theta: float | None = None  # passed to rope_cache; None: its default (the grading's default_theta)


class RopeFunctions(Kind):
    Grading = RopeGrading
    Config = RopeConfig
    traits = frozenset({"low_precision", "makes_tensors"})
    probes = frozenset({"gradients", "device"})  # tokens are independent: equality on every case says it
    grads_of = "inputs"  # no parameters: the gradients graded are the float inputs
    outputs_apart = True  # each object's outputs are named on their own (judge._apart)
    pair_knobs = True  # its variants take two knobs at once (both edits made)

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.cache_name, self.apply_name = exercise.contract.objects
        self.default_theta = float(self.grading.default_theta)
        self.edited = EditedReference(exercise.solution_path, {k: list(v) for k, v in self.grading.edits.items()})
        # the reference's cos / sin that apply is graded with, made here in the grading process; then
        # the compiled reference is dropped, so the forked child holds none of it
        self._caches = {ci: self._reference_cache(ci) for ci in range(len(self.configs))}
        self.edited.forget()

    def _reference_cache(self, ci: int) -> tuple[torch.Tensor, torch.Tensor]:
        c = self.configs[ci]
        return self.edited.namespace()[self.cache_name](c["cache_len"], c["head_dim"], self.theta(ci))

    def theta(self, ci: int) -> float:
        return float(self.configs[ci].get("theta", self.default_theta))

    def cases(self, ci: int) -> list[Case]:
        c = self.configs[ci]
        D, H, S = c["head_dim"], c["heads"], c["cache_len"]
        g = generator(self.seed, ci, "rope cases")
        if ci not in self._caches:  # a config added after construction (benchmarks/mutation.py's probe configs)
            self._caches[ci] = self._reference_cache(ci)
        cos, sin = self._caches[ci]
        ones = lambda B, T: torch.ones(B, T, dtype=torch.bool)  # noqa: E731

        def draw(B: int, T: int) -> torch.Tensor:
            return torch.randn(B, H, T, D, generator=g)

        def applied(name, x, positions, **more) -> Case:
            B, _, T, _ = x.shape
            inputs = {"x": x, "cos": cos, "sin": sin, "positions": positions}
            return Case(name, inputs, ones(B, T), (T, T), **more)

        left = torch.arange(7)[None, :] >= torch.tensor([0, 3, 6])[:, None]  # (3, 7) left padding
        per_sample = (left.long().cumsum(-1) - 1).masked_fill(~left, 1)  # Hugging Face's position_ids
        padded = draw(3, 7)
        bf16 = draw(2, 7).to(torch.bfloat16)
        cases = [
            Case(Name("rope_cache", "name.rope_cache"), {"seq_len": S, "head_dim": D, "theta": c.get("theta")}, ones(1, S), (S, S)),
            applied(Name("prefill (positions=None)", "name.prefill_no_positions"), draw(2, 7), None, observe=True),
            applied(Name("chunk of 3 after 9 cached tokens", "name.chunk_after", n=3, m=9), draw(2, 3), torch.arange(9, 12)),
            applied(Name("decode step at position 12", "name.decode_at", n=12), draw(2, 1), torch.tensor([12])),
            applied(Name("left-padded batch, positions (B, T)", "name.left_padded_positions"), padded, per_sample),
            applied(Name("per-sample decode step, positions (B, 1)", "name.per_sample_decode"), draw(3, 1),
                    torch.tensor([[7], [4], [1]])),
            applied(Name("T=1 (positions=None)", "name.t1_no_positions"), draw(1, 1), None),
            applied(Name("bfloat16 x, positions (B, T)", "name.bf16_positions"), bf16,
                    torch.stack([torch.arange(7), torch.arange(5, 12)]),
                    dtype="bfloat16", tolerance=low_precision_tolerance(torch.bfloat16)),
            applied(Name("sample 2 of the left-padded batch alone", "name.sample_of_left_padded_alone", n=2),
                    padded[1:2].clone(), per_sample[1:2].clone()),
        ]
        return cases

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by the names shapes are written with: ``(B, H, T, D)``, the cache's ``(S, D)``."""
        D = self.configs[ci]["head_dim"]
        if "x" in case.inputs:
            B, H, T, _ = case.inputs["x"].shape
            return {"B": B, "H": H, "T": T, "D": D, "D/2": D // 2, "S": self.configs[ci]["cache_len"]}
        return {"S": case.inputs["seq_len"], "D": D, "D/2": D // 2}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        if "x" in case.inputs:
            return {"out": tuple(case.inputs["x"].shape)}
        shape = (case.inputs["seq_len"], case.inputs["head_dim"])
        return {"cos": shape, "sin": shape}

    def call(self, functions, case: Case) -> dict[str, Any]:
        i = case.inputs
        if "x" not in i:
            args = [i["seq_len"], i["head_dim"]] + ([i["theta"]] if i["theta"] is not None else [])
            got = functions[self.cache_name](*args)
            if isinstance(got, (tuple, list)) and len(got) == 2:
                return {"cos": got[0], "sin": got[1]}
            return {"cos": got, "sin": None}
        args = [i["x"].clone(), i["cos"].clone(), i["sin"].clone()]
        if i["positions"] is not None:
            args.append(i["positions"].clone())
        return {"out": first(functions[self.apply_name](*args))}

    # --- child --------------------------------------------------------------------------------

    def build(self, namespace: dict, ci: int, channel) -> Built:
        functions = built_functions(self.exercise, namespace).attempt
        try:  # a cheap look at what the cache returns: a pair (cos, sin) is the contract
            got = functions[self.cache_name](2, 4)
        except Exception:  # noqa: BLE001 — the graded cases show it with the user's line
            got = None
        pair = isinstance(got, (tuple, list)) and len(got) == 2 and all(isinstance(t, torch.Tensor) for t in got)
        if got is not None and not pair:
            what = type(got).__name__
            if isinstance(got, (tuple, list)):
                what = f"{what} of {len(got)}"
            elif isinstance(got, torch.Tensor):
                what = f"one {got.dtype} tensor {tuple(got.shape)}"
            raise ContractError("rope_functions.cache_not_pair", name=self.cache_name, got=what)
        return Built(functions)

    def run(self, attempt, case: Case) -> dict[str, Any]:
        return self.call(attempt, case)

    def grad_leaves(self, attempt, case: Case, built=None):
        """A copy of the case whose x is a leaf. Not cos and sin: the cache holds every angle twice
        (cat([freqs, freqs])), so an attempt that reads only the first half computes the same
        rotation with other gradients for the cache."""
        x = case.inputs["x"].detach().clone().requires_grad_(True)
        return dataclasses.replace(case, inputs={**case.inputs, "x": x}), {"x": x}

    def child_extra(self, attempt) -> dict | None:
        """The attempt's own functions together: does rotating q at m and k at n give scores that
        depend on m - n only (and keep norms)? And does the cache honour ``device``?"""
        from attnprep.grader.observe import DeviceTracker

        D = self.configs[0]["head_dim"]
        out: dict[str, Any] = {}
        g = generator(self.seed, 0, "rope relative")
        a, b = torch.randn(2, D, generator=g)
        try:
            cos, sin = attempt[self.cache_name](RELATIVE_LEN, D)
            q = attempt[self.apply_name](a.expand(1, 1, RELATIVE_LEN, D).clone(), cos, sin)
            k = attempt[self.apply_name](b.expand(1, 1, RELATIVE_LEN, D).clone(), cos, sin)
            q, k = first(q)[0, 0].double(), first(k)[0, 0].double()  # (L, D) each
            dots = q @ k.T  # (L, L): q at m, k at n
            worst = 0.0
            for shift in range(-(RELATIVE_LEN - 1), RELATIVE_LEN):
                diagonal = torch.diagonal(dots, offset=shift)  # every (m, n) with n - m = shift
                worst = max(worst, float((diagonal - diagonal[0]).abs().max()))
            scale = float(a.norm() * b.norm())
            out["relative"] = worst / scale
            out["norm_change"] = float((q.norm(dim=-1) - a.norm()).abs().max() / a.norm())
        except Exception as exc:  # noqa: BLE001 — the graded cases already showed whatever raises
            out["relative_error"] = f"{type(exc).__name__}: {str(exc)[:120]}"
        device = torch.device("cpu")
        tracker = DeviceTracker([], "", devices=[device])
        try:
            with tracker.scripted_opaque(), tracker:  # (the function scripted itself: its ops are not seen either)
                got = tracker.seen(attempt[self.cache_name])(5, D, device=device)
            out["device_ok"] = isinstance(got, (tuple, list)) and all(id(t) in tracker.on_device for t in got)
        except TypeError:
            out["device_ok"] = False
        return out

    # --- parent -------------------------------------------------------------------------------

    def reference(self, ci: int, zero_bias=frozenset()):
        functions = self.solution()

        def call(case: Case):
            if "x" in case.inputs and case.tolerance is not None:  # exact, to grade a low precision
                i = case.inputs
                exact = dict(case.inputs, x=i["x"].double(), cos=i["cos"].double(), sin=i["sin"].double())
                case = Case(case.name, exact, case.queries, case.seq)
            return self.call(functions, case)

        return call

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        """The reference called as the attempt is, for the divergence finder's trail: on the case's
        own inputs (a bfloat16 ``x`` stays bfloat16; the graded reference computes it exactly)."""
        functions = self.solution()
        return lambda case: self.call(functions, case)

    def reference_grads(self, ci: int, zero_bias, case: Case):
        """The reference's output on ``case`` with gradients on, and the gradient of x after the
        backward of its sum (what the child does to the attempt)."""
        case, leaves = self.grad_leaves(None, case, None)
        outputs = self.call(self.solution(), case)
        total = sum((o.nan_to_num() * case.mask(n, tuple(o.shape)).to(o.dtype)).sum() for n, o in outputs.items())
        total.backward()
        return outputs, {n: p.grad for n, p in leaves.items() if p.grad is not None}

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the edits of ``knob`` (a knob, or a tuple of knobs made together),
        called as the attempt is (the cache on its own, apply on the reference's cache)."""
        knobs = knobs_of(knob)
        # compiled when first called: edits that clash raise there
        return lambda case: self.call(self.edited.namespace(knobs), case)

    def extra_checks(self, extra: dict) -> list[Check]:
        checks = []
        if "relative" in extra:
            relative, norms = float(extra["relative"]), float(extra.get("norm_change", math.inf))
            ok = relative <= RELATIVE_TOL and norms <= RELATIVE_TOL
            key = "rope_functions.relative_ok" if ok else "rope_functions.relative_bad"
            checks.append(Check("relative", ok, msg(key, L=RELATIVE_LEN, deviation=relative, norms=norms)))
        else:
            checks.append(Check("relative", None, msg("rope_functions.relative_not_run", detail=str(extra.get("relative_error", "")))))
        device_ok = bool(extra.get("device_ok"))
        checks.append(Check("cache_device", device_ok, msg(
            "rope_functions.device_ok" if device_ok else "rope_functions.device_ignored", name=self.cache_name)))
        return checks

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        if "device_ok" in extra and not extra["device_ok"]:  # the cache made on the CPU whatever it is asked
            return [Diagnosis("tensor_without_device", (msg("rope_functions.device_ignored", name=self.cache_name),))]
        return []


KIND = RopeFunctions
