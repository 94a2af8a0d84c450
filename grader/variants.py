"""The mask fills a mistaken variant is tried with.

Every exercise names its mistakes as edits of its reference solution (``[grading] edits``,
:mod:`attnprep.grader.edits`); what the kinds share besides is here: the fills a variant is tried
with (``-inf`` and a large negative, which differ on fully masked rows, which several mistakes
create) and a fill per mask (:class:`MaskFills`). The functional forms the grader computed its
mistakes with before (knob helpers, the band a mask mistake allows, the scale and RoPE variants)
are the tests' fixed twin, tests/functional_variants.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

FILLS = (float("-inf"), -1e9)


@dataclass(frozen=True)
class MaskFills:
    """A fill for each of the two masks, and how they meet where both block a key: ``"padding_first"``
    (masked_fill one after the other, the causal fill written last), ``"causal_first"`` (the padding
    fill last) or ``"added"`` (additive biases summed, Hugging Face's ``(1 - mask) * finfo.min``
    convention: a key both masks block gets their sum, ``-inf`` once ``finfo.min`` twice overflows).
    A fill of ``None`` is ``torch.finfo(scores.dtype).min``. A mistake that merges the two masks
    into one uses the padding fill.

    :meth:`fill` is one mask's fill wherever a reference fills it (``edits.MaskFiller`` calls it at
    each ``masked_fill`` of a reference that fills its masks one by one); :meth:`apply` both masks at
    once (where the edits of a reference's merged fill call ``mask_fills``)."""

    padding: float | None
    causal: float | None
    order: str = "padding_first"

    def value(self, mask: str, dtype: torch.dtype | None = None) -> float:
        """The fill of ``mask`` (``"padding"`` or ``"causal"``) as a number."""
        f = getattr(self, mask)
        return float(torch.finfo(dtype or torch.float32).min) if f is None else f

    def fill(self, mask: str, scores, blocked, earlier: tuple[str, ...] = ()):
        """``scores`` with the keys ``blocked`` by ``mask`` filled, after the masks ``earlier`` were:
        added as a bias, or written where no earlier mask wrote when the order has this mask first
        (its fill is the one the others overwrite)."""
        value = self.value(mask, scores.dtype)
        if self.order == "added":
            zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
            return scores + torch.where(blocked, torch.tensor(value, dtype=scores.dtype, device=scores.device), zero)
        if self.order == f"{mask}_first":  # written first: what a mask filled before it wrote stays
            for other in earlier:
                blocked = blocked & (scores != self.value(other, scores.dtype))
        return scores.masked_fill(blocked, value)

    def apply(self, scores, pad_blocked, causal_blocked):
        """Both masks at once, in the order of :data:`MASKS` (as the edits splitting a merged fill call it)."""
        for n, (mask, blocked) in enumerate(zip(MASKS, (pad_blocked, causal_blocked))):
            scores = self.fill(mask, scores, blocked, MASKS[:n])
        return scores

    def __float__(self) -> float:  # where one fill is needed: the padding's
        return self.value(MASKS[0])


MASKS = tuple(f.name for f in dataclasses.fields(MaskFills) if f.name != "order")  # the padding, then the causal mask


# Tried (by kinds with ``mask_fills``) for mask mistakes only, when no knob reproduces the outputs
# with one of FILLS: the two masks filled differently (-inf for one, -1e9 for the other, in either
# order) or added as biases (-1e9, or finfo.min, which a key blocked twice overflows to -inf).
MASK_FILLS = tuple(MaskFills(a, b, order) for order in ("padding_first", "causal_first")
                   for a, b in ((float("-inf"), -1e9), (-1e9, float("-inf")))) + (
    MaskFills(None, None, "added"), MaskFills(-1e9, -1e9, "added"))
