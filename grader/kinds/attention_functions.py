"""Kind ``attention_functions``: a mask function and an attention function over ``(B, H, T, D)``.

The contract's objects are ``[mask_function, attention_function]``: ``mask(T, *args, device=None)``
returns a bool ``(T, T)`` mask (``True`` = may attend) and ``attention(q, k, v, *args,
attention_mask)`` applies it with a key padding mask and the ``1/sqrt(D)`` scale. The mask is
causal, ``j <= i``, narrowed to a sliding window, ``i - window < j``, when the exercise's calls
take a ``window``; the attention is always masked that
way, so only the masked cases of the sequence set are graded.

Exercise data (``[grading]``): ``configs`` (``heads``, ``dim`` and the extra arguments' values);
``args``, the extra arguments both functions take after ``seq_len`` / ``v`` (``["window"]``; none
by default); ``mask_checks``, the extra arguments the mask function is checked with on its own
(``[{ window = 1 }, …]``); ``mask_inverted``, the mistake named when the mask function returns the
blocked positions; ``mask_named``, mask knobs named when the mask function returns their mask (what the reference's
mask function returns with the knob's edits);
``knobs``, the mistakes tried, in order; ``edits``, each knob's ``{ old, new }`` edits of the
solution (a knob's variant is the edited reference, called as the attempt is; two knobs, both
edits); ``fill``, the reference's mask fill as written, and ``mask_split``, the edits that write its
one merged fill as one fill per mask (:class:`attnprep.grader.edits.FillReference`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from attnprep.grader.cases import Case, rows, sequence_cases, to_case
from attnprep.grader.edits import FillReference, knobs_of
from attnprep.grader.kinds.base import Config, Grading, Kind, first
from attnprep.grader.result import Check, Diagnosis, msg

MASK_SIZES = (1, 4, 7)


def _key(T: int, args: dict) -> str:
    return ":".join([str(T), *(f"{k}={v}" for k, v in sorted(args.items()))])


@dataclass(frozen=True, kw_only=True)
class FunctionsGrading(Grading):
    args: tuple[str, ...] = ()  # the extra arguments both functions take, from each config
    mask_checks: tuple[dict, ...] = ({},)  # the extra arguments the mask function is checked with alone
    mask_inverted: str = ""  # the mistake named when the mask function returns the blocked positions
    mask_named: tuple[str, ...] = ()  # mask knobs named when the mask function returns their mask
    edits: dict[str, list[dict]] = dataclasses.field(default_factory=dict)  # knob -> its {old, new} edits of the solution
    fill: str = ""  # the reference's mask fill as written (a variant with another fill has it there)
    mask_split: tuple[dict, ...] = ()  # edits writing the reference's one merged fill as one per mask


@dataclass(frozen=True, eq=False, kw_only=True)
class FunctionsConfig(Config):
    dim: int  # the head size D of q, k, v (B, H, T, D)
    heads: int
    window: int | None = None  # the window a windowed mask function takes (sliding_window)


ADDITIVE_BLOCK = -1e4  # an additive float mask blocks with -inf or a large negative number


def _additive(m: torch.Tensor) -> list[list[int]] | None:
    """A float mask in the additive form (0 where attention is allowed, -inf or a large negative
    number where blocked: CLIP's build_attention_mask, nn.Transformer's square subsequent mask) as
    the bool mask it stands for, 1 = allowed; None for any other tensor."""
    if not m.is_floating_point() or m.dim() != 2:
        return None
    allowed, blocked = m == 0, m <= ADDITIVE_BLOCK
    return allowed.int().tolist() if bool((allowed | blocked).all()) else None

class AttentionFunctions(Kind):
    Grading = FunctionsGrading
    Config = FunctionsConfig
    traits = frozenset({"attention", "rows", "mask_function"})
    probes = frozenset({"causality", "padding", "batch", "gradients", "device", "softmax_rows"})
    grads_of = "inputs"  # no parameters: the gradients graded are the float inputs
    pair_knobs = True  # its variants take two knobs at once (both edits made)
    mask_fills = True  # its variants take variants.MaskFills (a fill per mask: [grading] mask_split)

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.mask_name, self.attention_name = exercise.contract.objects
        grading = self.grading
        self.arg_names: list[str] = list(grading.args)
        self.mask_checks: list[dict] = [dict(a) for a in grading.mask_checks]
        self.mask_inverted: str = grading.mask_inverted
        self.mask_named: list[str] = list(grading.mask_named)
        self.edited = FillReference(exercise.solution_path, {k: list(v) for k, v in grading.edits.items()},
                                         grading.fill, list(grading.mask_split))

    def cases(self, ci: int) -> list[Case]:
        c = self.configs[ci]
        shape = (c["heads"], c["dim"])
        out = []
        for s in sequence_cases({"q": shape, "k": shape, "v": shape}, self.seed, ci):
            if not s.is_causal:  # the attention is masked by definition: only those cases
                continue
            inputs = {k: v.transpose(1, 2).contiguous() for k, v in s.tensors.items()}  # (B, H, T, D)
            inputs.update({n: c[n] for n in self.arg_names})
            inputs["attention_mask"] = s.mask
            out.append(to_case(s, inputs, lambda positions: {"out": rows(positions, 2, 4)}))
        return out

    def config_params(self, ci: int) -> dict[str, Any]:
        c = self.configs[ci]
        return {"heads": c["heads"], "dim": c["dim"], **{n: c[n] for n in self.arg_names}}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        B, T = case.queries.shape
        c = self.configs[ci]
        return {"out": (B, c["heads"], T, c["dim"])}

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        B, T = case.queries.shape
        return {"B": B, "H": self.configs[ci]["heads"], "T": T, "D": self.configs[ci]["dim"]}

    def call(self, functions, case: Case):
        i = case.inputs  # the child compares them before and after: a change in place is named
        args = [i[n] for n in self.arg_names]
        return functions[self.attention_name](i["q"], i["k"], i["v"], *args, i["attention_mask"])

    # --- child --------------------------------------------------------------------------------

    def run(self, attempt, case: Case) -> dict[str, Any]:
        return {"out": first(self.call(attempt, case))}

    def reference_grads(self, ci: int, zero_bias, case: Case):
        case, leaves = self.grad_leaves(None, case, None)
        outputs = {"out": first(self.call(self.solution(), case))}
        total = sum((o.nan_to_num() * case.mask(n, tuple(o.shape)).to(o.dtype)).sum() for n, o in outputs.items())
        total.backward()
        return outputs, {n: p.grad for n, p in leaves.items() if p.grad is not None}

    def grad_leaves(self, attempt, case: Case, built=None):
        inputs = dict(case.inputs)
        leaves = {}
        for k in ("q", "k", "v"):
            inputs[k] = leaves[k] = inputs[k].detach().clone().requires_grad_(True)
        return dataclasses.replace(case, inputs=inputs), leaves

    def child_extra(self, attempt) -> dict | None:
        """The mask function on its own: values for a few sizes, and whether it honours ``device``."""
        from attnprep.grader.observe import DeviceTracker

        mask_fn = attempt[self.mask_name]
        out: dict[str, Any] = {}
        for args in self.mask_checks:
            for T in MASK_SIZES:
                m = mask_fn(T, *(args[n] for n in self.arg_names))
                is_tensor = isinstance(m, torch.Tensor)
                out[_key(T, args)] = {"type": type(m).__name__, "shape": list(m.shape) if is_tensor else [],
                                      "dtype": str(m.dtype) if is_tensor else "",
                                      "values": m.int().tolist() if is_tensor else None,
                                      "additive": _additive(m) if is_tensor else None}
        device = torch.device("cpu")
        tracker = DeviceTracker([], "", devices=[device])
        with tracker.scripted_opaque(), tracker:  # (the function scripted itself: its ops are not seen either)
            m = tracker.seen(mask_fn)(5, *(self.mask_checks[0][n] for n in self.arg_names), device=device)
        out["device_ok"] = isinstance(m, torch.Tensor) and id(m) in tracker.on_device
        return out

    # --- parent -------------------------------------------------------------------------------

    def reference(self, ci: int, zero_bias=frozenset()):
        functions = self.solution()
        return lambda case: {"out": first(self.call(functions, case))}

    def variant(self, ci: int, zero_bias, knob, fill):
        """The reference with the edits of ``knob`` (a knob, or a tuple of knobs made together), its
        masks filled with ``fill`` (a ``variants.MaskFills``: one fill per mask), called as the attempt is."""
        knobs = knobs_of(knob)
        # compiled when first called: edits that clash raise there
        return lambda case: {"out": first(self.call(self.edited.namespace(knobs, fill), case))}

    def mask_made(self, T: int, args: dict, knob: str = "") -> torch.Tensor:
        """What the reference's mask function returns for ``T`` and ``args``, or with ``knob``'s edits."""
        function = self.edited.namespace(knobs_of(knob))[self.mask_name]
        return function(T, *(args[n] for n in self.arg_names))

    def _mask_values(self, T: int, args: dict, knob: str = "") -> list[list[int]]:
        return self.mask_made(T, args, knob).long().tolist()

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        T = case.queries.shape[1]
        allowed = self.mask_made(T, case.inputs)
        mask = case.inputs["attention_mask"]
        if mask is not None:
            allowed = allowed & mask[sample][None, :]
        return allowed

    def _call_text(self, T: int, args: dict) -> str:
        return f"{self.mask_name}({', '.join(str(v) for v in [T, *(args[n] for n in self.arg_names)])})"

    def extra_checks(self, extra: dict) -> list[Check]:
        name = self.mask_name
        windowed = bool(self.arg_names)  # the messages of a plain causal mask name it by T alone
        problem = None
        for args in self.mask_checks:
            for T in MASK_SIZES:
                got = extra.get(_key(T, args)) or {}
                call = self._call_text(T, args)
                if got.get("type") != "Tensor" or got.get("shape") != [T, T]:
                    problem = (msg("attention_functions.wrong_type", call=call, T=T, type=got.get("type"),
                                   shape=str(tuple(got.get("shape") or ()))) if windowed else
                               msg("mask.wrong_type", name=name, T=T, type=got.get("type"), shape=str(tuple(got.get("shape") or ()))))
                elif got.get("dtype") != "torch.bool":
                    problem = (msg("attention_functions.wrong_dtype", call=call, dtype=got.get("dtype")) if windowed else
                               msg("mask.wrong_dtype", name=name, T=T, dtype=got.get("dtype")))
                elif got.get("values") != self._mask_values(T, args):
                    problem = (msg("attention_functions.wrong_values", call=call, **args) if windowed else
                               msg("mask.wrong_values", name=name, T=T))
                if problem:
                    break
            if problem:
                break
        device_ok = bool(extra.get("device_ok"))
        ok = msg("attention_functions.ok", name=name) if windowed else msg("mask.ok", name=name)
        return [
            Check("mask_function", problem is None, problem or ok),
            Check("mask_device", device_ok, msg("mask.device_ok" if device_ok else "mask.device_ignored", name=name)),
        ]

    def _mask_is(self, extra: dict, mistake: str, inverted: bool = False) -> bool:
        """The mask function returns, for every checked size and argument, the mask of ``mistake``
        (or the complement of the right one)."""
        for args in self.mask_checks:
            for T in MASK_SIZES:
                values = (extra.get(_key(T, args)) or {}).get("values")
                want = self._mask_values(T, args, mistake)
                if inverted:
                    want = [[1 - v for v in row] for row in want]
                if values != want:
                    return False
        return True

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        T, args = max(MASK_SIZES), self.mask_checks[-1]
        got = extra.get(_key(T, args)) or {}
        call = self._call_text(T, args)
        found = []
        if self.mask_inverted and T > 1 and self._mask_is(extra, "", inverted=True):
            evidence = (msg("attention_functions.evidence_inverted", call=call) if self.arg_names else
                        msg("evidence.mask_inverted", name=self.mask_name, T=T))
            found.append(Diagnosis(self.mask_inverted, (evidence,)))
        elif got.get("type") == "Tensor" and got.get("dtype") != "torch.bool" and got.get("values") == self._mask_values(T, args):
            found.append(Diagnosis("mask_dtype", (msg("evidence.mask_dtype", name=self.mask_name, dtype=got.get("dtype")),)))
        elif got.get("type") == "Tensor" and got.get("dtype") != "torch.bool" and got.get("additive") == self._mask_values(T, args):
            found.append(Diagnosis("mask_dtype", (msg("evidence.mask_dtype_additive", name=self.mask_name,
                                                      dtype=got.get("dtype")),)))
        else:
            for knob in self.mask_named:
                if self._mask_is(extra, knob):
                    found.append(Diagnosis(knob.split(":")[0], (msg("attention_functions.evidence_mask", call=call),)))
                    break
        return found


KIND = AttentionFunctions
