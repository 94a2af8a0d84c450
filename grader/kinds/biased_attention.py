"""Kind ``biased_attention``: a slopes function and causal attention with a linear position bias.

The contract's objects are ``[slopes_function, attention_function]``: ``slopes(num_heads)`` returns
float32 ``(H,)``, one slope per head (ALiBi's geometric sequence, Press et al.'s code for a head
count that is not a power of two), and ``attention(q, k, v, attention_mask)`` on ``(B, H, T, D)``
adds ``-slope_h · (i - j)`` to the scaled scores before the causal and key padding masks. It is
:mod:`.attention_functions` with the mask function's role taken by the slopes function: the cases,
calls, gradients and mistakes are that kind's (each knob a named edit of the reference, ``[grading]
edits``, with ``fill`` and ``mask_split``); what differs is here.

The two objects are graded each on its own: the slopes function by its values for the head counts
of ``slope_checks`` (a check and, when its values are a slope mistake's, that mistake named from
them), the attention by its outputs. An attention that computes its slopes by calling a wrong slopes
function has wrong outputs of its own, which the same slope knob reproduces: the mistake is named
once. A slope mistake that only shows for some head counts (the rule for a count that is not a
power of two) is graded on configs of both kinds.

Exercise data (``[grading]``): ``configs`` (``heads``, ``dim``); ``slope_checks``, the head counts
the slopes function is checked with on its own; ``mask_named``, the slopes function's own mistakes,
named (one, or two at once) when its values are what the reference's slopes function returns with
their edits; ``knobs``, the mistakes tried, in order; ``edits``, ``fill`` and ``mask_split`` as
:mod:`.attention_functions` reads them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import torch

from attnprep.grader.cases import Case
from attnprep.grader.edits import knobs_of
from attnprep.grader.kinds.attention_functions import AttentionFunctions, FunctionsGrading
from attnprep.grader.result import Check, Diagnosis, msg

SLOPE_RTOL, SLOPE_ATOL = 1e-5, 1e-8


# --- the kind -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BiasedGrading(FunctionsGrading):
    slope_checks: tuple[int, ...] = ()  # the head counts the slopes function is checked with alone


class BiasedAttention(AttentionFunctions):
    Grading = BiasedGrading
    traits = AttentionFunctions.traits - {"mask_function"} | {"position_bias"}  # a slopes function, no mask one

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.slopes_name = self.mask_name
        self.slope_checks: list[int] = [int(h) for h in self.grading.slope_checks]

    # --- child --------------------------------------------------------------------------------

    def child_extra(self, attempt) -> dict | None:
        """The slopes function on its own: what it returns for each head count of ``slope_checks``."""
        out: dict[str, Any] = {}
        for H in self.slope_checks:
            s = attempt[self.slopes_name](H)
            is_tensor = isinstance(s, torch.Tensor)
            out[str(H)] = {"type": type(s).__name__, "shape": list(s.shape) if is_tensor else [],
                           "dtype": str(s.dtype) if is_tensor else "",
                           "values": s.detach().double().cpu().reshape(-1).tolist() if is_tensor else None}
        return out

    # --- parent -------------------------------------------------------------------------------

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        """Causal (``j <= i``) and the sample's key padding: the slopes function masks nothing."""
        T = case.queries.shape[1]
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        mask = case.inputs["attention_mask"]
        if mask is not None:
            allowed = allowed & mask[sample][None, :]
        return allowed

    def _slopes_problem(self, extra: dict):
        """The first head count whose slopes are wrong, and the message saying how."""
        call = lambda H: f"{self.slopes_name}({H})"  # noqa: E731
        for H in self.slope_checks:
            got = extra.get(str(H)) or {}
            if got.get("type") != "Tensor" or got.get("shape") != [H]:
                return H, msg("biased_attention.wrong_type", call=call(H), type=got.get("type"),
                              shape=str(tuple(got.get("shape") or ())), H=H)
            if got.get("dtype") != "torch.float32":
                return H, msg("biased_attention.wrong_dtype", call=call(H), dtype=got.get("dtype"))
        wrong = [H for H in self.slope_checks if not self._values_are(extra.get(str(H)) or {}, H, "")]
        if wrong:  # the head counts where it is wrong and where it is right: a case group shows
            right = [H for H in self.slope_checks if H not in wrong]
            return wrong[0], msg("biased_attention.wrong_values", name=self.slopes_name,
                                 heads=", ".join(map(str, wrong)), right=", ".join(map(str, right)) or "-")
        return None, None

    def _values_are(self, got: dict, H: int, mistake) -> bool:
        """The slopes function returned, for ``H`` heads, what the reference's returns with the edits
        of ``mistake`` (a knob, a tuple of knobs, or none)."""
        values = got.get("values")
        if values is None or len(values) != H:
            return False
        want = self.edited.namespace(knobs_of(mistake))[self.slopes_name](H).double()
        return bool(torch.isclose(torch.tensor(values, dtype=torch.float64), want, rtol=SLOPE_RTOL, atol=SLOPE_ATOL).all())

    def extra_checks(self, extra: dict) -> list[Check]:
        _, problem = self._slopes_problem(extra)
        ok = msg("biased_attention.ok", name=self.slopes_name)
        return [Check("slopes_function", problem is None, problem or ok)]

    def extra_diagnoses(self, extra: dict) -> list[Diagnosis]:
        """A slope mistake named from the slopes function's own values, with the head counts where
        they are wrong (the non-power-of-two rule shows only at those counts)."""
        wrong, _ = self._slopes_problem(extra)
        if wrong is None:
            return []
        named = self.mask_named  # the slopes' own mistakes ([grading] mask_named), named from its values
        for mistake in (*named, *itertools.combinations(named, 2)):  # each, then two together
            got = [(H, extra.get(str(H)) or {}) for H in self.slope_checks]
            if all(g.get("type") == "Tensor" and self._values_are(g, H, mistake) for H, g in got):
                differ = [H for H, g in got if not self._values_are(g, H, "")]
                evidence = msg("biased_attention.evidence_slopes", name=self.slopes_name,
                               heads=", ".join(str(H) for H in differ))
                ids = (mistake,) if isinstance(mistake, str) else mistake
                return [Diagnosis(i.split(":")[0], (evidence,)) for i in dict.fromkeys(ids)]  # a knob's variant: its mistake
        return []


KIND = BiasedAttention
