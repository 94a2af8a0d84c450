"""Kind ``sdpa_functions``: a hand-written ``softmax(x, dim=-1)`` and a functional scaled dot-product
attention with torch's semantics, ``sdpa(query, key, value, attn_mask=None, is_causal=False,
scale=None)``.

Two kinds of case: the softmax alone (output ``probs``) on inputs of several ranks and dims, with
ordinary magnitudes, magnitudes up to 1e4 (a naive ``exp`` overflows or underflows), and ``-inf``
entries (rows that are all ``-inf`` are not graded); and the attention (output ``out``) on 3-D or
4-D inputs with L != S and Ev != E: plain, an explicit ``scale``, ``is_causal`` (top-left, as torch),
bool and float masks broadcast from ``(L, S)``, from the keys alone (``(B, 1, 1, S)``) or given in
full, and a case whose scores are large (exact in float32, so any order of computing them gives the
same numbers) where a softmax without the max subtraction overflows. Perturbations: later keys
under ``is_causal``, masked keys, a sample out of its batch.

The built-ins the exercise forbids are recognised by the aten ops that run (:mod:`..forbidden`).

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{ old, new }`` substitutions of the solution's text, each found exactly once); a knob's variant is
the edited reference called as the attempt is, its masks filled with the fill tried (``[grading]
fill`` names the reference's), and two knobs at once are both edits made together.

Exercise data (``[grading]``): ``configs`` (``batch``, ``heads`` (0: 3-D inputs), ``L``, ``S``,
``E``, ``Ev``); ``scale``, the explicit scale of one case; ``softmax``, the softmax cases (``shape``,
``dim`` (absent: called without it), ``magnitude``, ``offset``, ``neg_inf``, the share of ``-inf``
entries); ``forbidden``, aten op -> name; ``knobs``, the mistakes tried, in order, ``edits`` and
``fill``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from attnprep.grader.cases import PLAIN, Case, alone, generator
from attnprep.grader.cases import changed as changed_
from attnprep.grader.edits import FillReference, knobs_of
from attnprep.grader.forbidden import ForbiddenOps
from attnprep.grader.kinds.base import Config, Grading, Kind, first
from attnprep.grader.result import Name
from attnprep.grader.tensors import RTOL

SOFTMAX_OUT, ATTENTION_OUT = "probs", "out"


# --- the kind ---------------------------------------------------------------------------------


def _rows_with_a_true(m: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    """``m`` (bool, last dim the keys) with one random True added to every row that has none."""
    flat = m.reshape(-1, m.shape[-1]).clone()
    empty = ~flat.any(-1)
    picks = torch.randint(0, m.shape[-1], (flat.shape[0],), generator=g)
    flat[empty, picks[empty]] = True
    return flat.reshape(m.shape)


def _softmax_tolerance(x: torch.Tensor) -> tuple[float, float] | None:
    """(rtol, atol) of a softmax case whose inputs are large, None (the grader's float32 one) otherwise.

    A float32 softmax that rounds an intermediate of the inputs' size (``exp(x - logsumexp)``, with
    the log-sum-exp ``m + log(sum)`` rounded to float32) errs in the exponent by up to an ulp of
    ``max|x|``, i.e. by that much relatively in every probability: on inputs near 1e4, about 1e-3.
    Four such ulps are allowed; the mistakes graded on these cases (overflow, the wrong max) give
    NaN or errors of order one."""
    finite = x[torch.isfinite(x)]
    big = float(finite.abs().max()) if finite.numel() else 0.0
    rtol = 4 * torch.finfo(torch.float32).eps * big
    return (rtol, rtol) if rtol > RTOL else None


@dataclass(frozen=True, kw_only=True)
class SdpaGrading(Grading):
    scale: float = 0.37  # the explicit scale of one case
    softmax: tuple[dict, ...] = ()  # the softmax cases: shape, dim, magnitude, offset, neg_inf
    forbidden: dict[str, str] = field(default_factory=dict)  # aten op -> the built-in's name
    edits: dict[str, list[dict]] = field(default_factory=dict)  # knob -> its {old, new} edits of the solution
    fill: str = ""  # the reference's mask fill as written (a variant with another fill has it there)


IS_CAUSAL = Name("is_causal", "name.is_causal")
BOOL_KEYS = Name("bool key mask", "name.bool_key_mask")
ADDITIVE_KEYS = Name("additive key mask", "name.additive_key_mask")


@dataclass(frozen=True, eq=False, kw_only=True)
class SdpaConfig(Config):
    batch: int
    heads: int  # 0: 3-D inputs (B, L, E)
    L: int  # queries
    S: int  # keys
    E: int  # the query / key width
    Ev: int  # the value width


class SdpaFunctions(Kind):
    Grading = SdpaGrading
    Config = SdpaConfig
    traits = frozenset({"attention", "rows", "torch_sdpa"})
    probes = frozenset({"causality", "padding", "batch", "gradients", "device", "softmax_rows"})
    grads_of = "inputs"  # no parameters: the gradients graded are the float inputs
    outputs_apart = True  # each object's outputs are named on their own (judge._apart)
    pair_knobs = True  # its variants take two knobs at once (both edits made)

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.softmax_name, self.attention_name = exercise.contract.objects
        self.scale = float(self.grading.scale)
        self.softmax_cases: list[dict] = [dict(c) for c in self.grading.softmax]
        self.forbidden: dict[str, str] = dict(self.grading.forbidden)
        self.edited = FillReference(exercise.solution_path, {k: list(v) for k, v in self.grading.edits.items()},
                                    self.grading.fill)

    # --- cases --------------------------------------------------------------------------------

    def _lead(self, c: dict, B: int | None = None) -> tuple[int, ...]:
        B = c["batch"] if B is None else B
        return (B, c["heads"]) if c["heads"] else (B,)

    def cases(self, ci: int) -> list[Case]:
        c = self.configs[ci]
        g = generator(self.seed, ci, "attention")
        B, L, S, E, Ev = c["batch"], c["L"], c["S"], c["E"], c["Ev"]
        lead = self._lead(c)
        four = bool(c["heads"])

        def draw(lead=lead) -> dict[str, torch.Tensor]:
            return {"query": torch.randn(*lead, L, E, generator=g), "key": torch.randn(*lead, S, E, generator=g),
                    "value": torch.randn(*lead, S, Ev, generator=g)}

        def key_shape(m):  # a (B, S) key mask as (B, 1, 1, S) or (B, 1, S)
            return m[:, None, None, :] if four else m[:, None, :]

        every = torch.ones(B, L, dtype=torch.bool)
        out: list[Case] = []

        def case(name, tensors, mask=None, causal=False, scale=None, queries=every, **extra):
            inputs = {**tensors, "attn_mask": mask, "is_causal": causal, "scale": scale}
            graded = {ATTENTION_OUT: self._rows(queries, four)}
            unchanged = extra.pop("unchanged", None)
            out.append(Case(name, inputs, queries, (L, S), graded,
                            unchanged=None if unchanged is None else {ATTENTION_OUT: self._rows(unchanged, four)}, **extra))

        main = draw()
        first_ci = ci == 0
        case(PLAIN, main)
        case(Name(f"scale={self.scale:g}", "name.scale", scale=f"{self.scale:g}"), main, scale=self.scale)
        case(IS_CAUSAL, main, causal=True, observe=True, picture=first_ci)  # every config: gradients, device
        bool_ls = _rows_with_a_true(torch.rand(L, S, generator=g) < 0.5, g)
        case(Name("bool mask (L, S)", "name.bool_mask_ls"), main, bool_ls, picture=first_ci)
        keys = _rows_with_a_true(torch.rand(B, S, generator=g) < 0.6, g)
        keyed = draw()
        case(BOOL_KEYS, keyed, key_shape(keys))
        full = torch.randn(*lead, L, S, generator=g) * 2
        full = full.masked_fill(~_rows_with_a_true(torch.rand(*lead, L, S, generator=g) < 0.7, g), float("-inf"))
        case(Name("float mask (full)", "name.float_mask_full"), main, full, picture=first_ci)
        additive = torch.zeros(B, S).masked_fill(~keys, torch.finfo(torch.float32).min)  # Hugging Face's 0 / min
        case(ADDITIVE_KEYS, keyed, key_shape(additive))
        if E in (1, 4, 16, 64):  # 1/sqrt(E) is a power of two: the scores are exact however computed
            big = {"query": torch.randint(-3, 4, (*lead, L, E), generator=g).float() * 8,
                   "key": torch.randint(-3, 4, (*lead, S, E), generator=g).float() * 8,
                   "value": torch.randn(*lead, S, Ev, generator=g)}
            case(Name("large scores", "name.large_scores"), big)
        # perturbations
        cut = max(1, min(L, S) // 2)
        later = draw()
        changed = {n: main[n] if n == "query" else torch.cat([main[n][..., :cut, :], later[n][..., cut:, :]], dim=-2)
                   for n in main}
        early = torch.arange(L)[None, :].expand(B, L) < cut
        case(changed_(IS_CAUSAL, "later_keys"), changed, causal=True, base=IS_CAUSAL, unchanged=early, check="causality")
        fresh = draw()
        hidden = key_shape(~keys)[..., 0, :, None] if four else (~keys)[:, :, None]  # (B, [1,] S, 1)
        moved = {n: keyed[n] if n == "query" else torch.where(hidden, fresh[n], keyed[n]) for n in keyed}
        case(changed_(BOOL_KEYS, "masked_keys"), moved, key_shape(keys), base=BOOL_KEYS, unchanged=every,
             check="padding")
        case(changed_(ADDITIVE_KEYS, "masked_keys"), moved, key_shape(additive), base=ADDITIVE_KEYS,
             unchanged=every, check="padding")
        if B > 1:
            one = {n: t[1:2].clone() for n, t in main.items()}
            case(alone(None, 2), one, queries=every[1:2], base=PLAIN, unchanged=every[1:2], base_rows=(1, 2),
                 check="batch")
        if ci == 0:
            out += self._softmax_cases()
        return out

    @staticmethod
    def _rows(queries: torch.Tensor, four: bool) -> torch.Tensor:
        B, L = queries.shape
        return queries.reshape(B, 1, L, 1) if four else queries.reshape(B, L, 1)

    def _softmax_cases(self) -> list[Case]:
        g = generator(self.seed, 0, "softmax")
        out = []
        for spec in self.softmax_cases:
            shape = tuple(spec["shape"])
            x = torch.randn(*shape, generator=g) * float(spec.get("magnitude", 1.0)) + float(spec.get("offset", 0.0))
            share = float(spec.get("neg_inf", 0.0))
            if share:
                x = x.masked_fill(torch.rand(*shape, generator=g) < share, float("-inf"))
            dim = spec.get("dim")
            along = -1 if dim is None else dim
            graded = torch.isfinite(x).any(dim=along, keepdim=True).expand(shape)  # an all -inf row is NaN in torch
            label = Name("default dim", "name.default_dim") if dim is None else Name(f"dim={dim}", "name.dim", dim=dim)
            scale = (f" ×{spec['magnitude']:g}" if "magnitude" in spec else "") + (f" {spec['offset']:+g}" if "offset" in spec else "")
            inf = Name(" with -inf", "name.with_inf") if share else ""
            name = Name(f"softmax {tuple(shape)} {label}{scale}{inf}", "name.softmax", shape=str(tuple(shape)), dim=label,
                        scale=scale, inf=inf)
            out.append(Case(name, {"x": x, "dim": dim}, torch.ones(1, 1, dtype=torch.bool), (1, 1), {SOFTMAX_OUT: graded},
                            tolerance=_softmax_tolerance(x)))
        return out

    def config_params(self, ci: int) -> dict[str, Any]:
        c = self.configs[ci]
        shape = "(B, H, L, E)" if c["heads"] else "(B, L, E)"
        return {"inputs": shape, **{k: c[k] for k in ("batch", "heads", "L", "S", "E", "Ev") if k != "heads" or c["heads"]}}

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        if "x" in case.inputs:
            return {SOFTMAX_OUT: tuple(case.inputs["x"].shape)}
        c = self.configs[ci]
        return {ATTENTION_OUT: (*self._lead(c, case.queries.shape[0]), c["L"], c["Ev"])}

    def call(self, functions, case: Case) -> dict[str, Any]:
        i = case.inputs
        if "x" in i:
            fn = functions[self.softmax_name]
            got = fn(i["x"].clone()) if i["dim"] is None else fn(i["x"].clone(), dim=i["dim"])
            return {SOFTMAX_OUT: first(got)}
        mask = None if i["attn_mask"] is None else i["attn_mask"].clone()
        got = functions[self.attention_name](i["query"].clone(), i["key"].clone(), i["value"].clone(), attn_mask=mask,
                                             is_causal=i["is_causal"], scale=i["scale"])
        return {ATTENTION_OUT: first(got)}

    # --- child --------------------------------------------------------------------------------

    def run(self, attempt, case: Case) -> dict[str, Any]:
        with ForbiddenOps(self.forbidden, self.seen_builtins):
            return self.call(attempt, case)

    def grad_leaves(self, attempt, case: Case, built=None):
        inputs = dict(case.inputs)
        leaves = {}
        for k in ("query", "key", "value"):
            inputs[k] = leaves[k] = inputs[k].detach().clone().requires_grad_(True)
        case.inputs = inputs
        return case, leaves

    # --- parent -------------------------------------------------------------------------------

    def reference(self, ci: int, zero_bias=frozenset()):
        functions = self.solution()
        return lambda case: self.call(functions, case)

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the edits of ``knob`` (a knob, or a tuple of knobs made together) and
        its masks filled with ``fill``, called as the attempt is."""
        knobs = knobs_of(knob)
        # compiled when first called: edits that clash raise there
        return lambda case: self.call(self.edited.namespace(knobs, fill), case)

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        i = case.inputs
        L, S = case.seq
        allowed = torch.ones(L, S, dtype=torch.bool)
        if i.get("is_causal"):
            allowed = torch.tril(allowed)
        mask = i.get("attn_mask")
        if mask is not None:  # a mask given per head gives (H, L, S): the heat-map takes its head's
            m = torch.broadcast_to(mask, (*i["query"].shape[:-2], L, S))[sample]
            allowed = allowed & (m if m.dtype == torch.bool else m > torch.finfo(m.dtype).min / 2)
        return allowed


KIND = SdpaFunctions
