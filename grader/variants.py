"""What the kinds share of their mistakes besides the edits of the references.

Every exercise names its mistakes as edits of its reference solution
(``[grading] edits``, :mod:`attnprep.grader.edits`). What is here: the fills a variant is tried with
(``-inf`` and a large negative, which differ on fully masked rows, which several mistakes create)
and a fill per mask (:class:`MaskFills`); the knobs of one variant (:class:`Slips`: none, one, or
two made together; a knob may carry a sub-variant after a colon, ``mla_norm_skipped:kv``, the part
before it the mistake id); the causal and sliding-window masks a mask mistake allows
(:func:`band`, also what the mask-function checks compare with); the scale helper; and the RoPE,
RMSNorm and layer helpers the grader's own prefill of a cached module's reference cache computes with
(:mod:`attnprep.grader.cached_prefill`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

FILLS = (float("-inf"), -1e9)


@dataclass(frozen=True)
class MaskFills:
    """A fill for each of the two masks, and how they meet where both block a key: ``"padding_first"``
    (masked_fill one after the other, the causal fill written last), ``"causal_first"`` (the padding
    fill last) or ``"added"`` (additive biases summed, Hugging Face's ``(1 - mask) * finfo.min``
    convention: a key both masks block gets their sum, ``-inf`` once ``finfo.min`` twice overflows).
    A fill of ``None`` is ``torch.finfo(scores.dtype).min``. Only :func:`attend` takes these; a
    mistake that merges the two masks into one uses the padding fill."""

    padding: float | None
    causal: float | None
    order: str = "padding_first"

    def apply(self, scores, pad_blocked, causal_blocked):
        low = torch.finfo(scores.dtype).min
        fp, fc = (low if f is None else f for f in (self.padding, self.causal))
        if self.order == "added":
            zero = torch.zeros((), dtype=scores.dtype, device=scores.device)
            return scores + torch.where(pad_blocked, fp, zero) + torch.where(causal_blocked, fc, zero)
        steps = [(pad_blocked, fp), (causal_blocked, fc)]
        for blocked, f in steps if self.order == "padding_first" else steps[::-1]:
            scores = scores.masked_fill(blocked, f)
        return scores

    def __float__(self) -> float:  # where one fill is needed: the padding's
        return float(torch.finfo(torch.float32).min) if self.padding is None else self.padding


# Tried (by kinds with ``mask_fills``) for mask mistakes only, when no knob reproduces the outputs
# with one of FILLS: the two masks filled differently (-inf for one, -1e9 for the other, in either
# order) or added as biases (-1e9, or finfo.min, which a key blocked twice overflows to -inf).
MASK_FILLS = tuple(MaskFills(a, b, order) for order in ("padding_first", "causal_first")
                   for a, b in ((float("-inf"), -1e9), (-1e9, float("-inf")))) + (
    MaskFills(None, None, "added"), MaskFills(-1e9, -1e9, "added"))


class Slips(frozenset):
    """The knobs of one variant: no mistake (the reference), one, or two made together.

    ``slips == "causal_ignored"`` reads "is one of the slips", so each variant below tests its knob
    the same way whether it is made alone or with another one."""

    def __eq__(self, other):
        if isinstance(other, str):
            return other in self  # frozenset's own lookup: no copy (variants compare in their inner loops)
        return frozenset.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = frozenset.__hash__


def slips(knobs: str | tuple[str, ...] | Slips = "") -> Slips:
    """``"a"`` or ``("a", "b")`` as :class:`Slips` (``""``: the reference)."""
    if isinstance(knobs, Slips):
        return knobs
    if isinstance(knobs, str):
        return Slips({knobs} if knobs else ())
    return Slips(k for k in knobs if k)


def pick(table: dict, mistake: Slips, default=None):
    """The value of the first of ``table``'s knobs that is among the slips, else ``default``."""
    return next((value for knob, value in table.items() if knob in frozenset(mistake)), default)

# What a sub-variant's evidence says instead of "(<sub-variant> only)": the text key
# "variant.<knob>" (attnprep/texts); a knob without one is described by its part after the colon.



def band(T, S, window, mistake="", device=None):
    """(T, S) bool, True where query i may attend key j under a causal mask: j <= i, and with a
    ``window`` also i - j < window (Mistral's sliding window: itself and window - 1 keys before
    it); or what a mask mistake allows instead. No window: the plain causal mask."""
    mistake = slips(mistake)
    ones = torch.ones(T, S, dtype=torch.bool, device=device)
    if mistake == "causal_inverted":
        return torch.triu(ones)  # j >= i: the future and the diagonal
    if mistake == "causal_inverted:strict":
        return torch.triu(ones, diagonal=1)  # j > i: masked_fill(tril, ...)
    if window is not None and mistake == "window_not_causal":
        return torch.triu(torch.tril(ones, diagonal=window - 1), diagonal=-(window - 1))  # |i - j| < window
    diagonal = pick({"causal_masks_diagonal": -1, "causal_leaks_next": 1}, mistake, 0)
    allowed = torch.tril(ones, diagonal=diagonal)
    if window is not None and mistake != "window_ignored":
        # i - j <= window: window + 1 keys; ":short": i - j < window - 1, one key too few
        floor = pick({"window_off_by_one": window + 1, "window_off_by_one:short": window - 1}, mistake, window)
        allowed = allowed & torch.triu(ones, diagonal=-(floor - 1))  # i - j < floor
    if mistake == "window_mask_inverted":
        allowed = ~allowed
    return allowed


def head_scale(d, mistake="", own=None):
    """1/sqrt(d) for a head of d features, or what a scale mistake uses instead."""
    wrong = {"missing_scale": 1.0, "scale_inverted": math.sqrt(d), "scale_by_dim": 1 / d, **(own or {})}
    return pick(wrong, slips(mistake), 1 / math.sqrt(d))


def _linear(weights, role, x):
    w = weights[role]
    return F.linear(x, w["weight"], w.get("bias"))


def _rms(weights, role, x, skip, eps=1e-6):
    if skip:
        return x
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)
    return (y * weights[role]["weight"].float()).to(x.dtype)


def rope(x, theta, mistake=""):
    """Rotate x (B, T, *, r) by position; DeepSeek's adjacent pairs unless a knob says otherwise."""
    mistake = slips(mistake)
    if mistake == "rope_skipped":
        return x
    T, r = x.shape[1], x.shape[-1]
    freqs = theta ** (-torch.arange(0, r, 2, dtype=torch.float32, device=x.device) / r)  # (r/2,)
    angles = torch.outer(torch.arange(T, dtype=torch.float32, device=x.device), freqs)  # (T, r/2)
    shape = (1, T) + (1,) * (x.dim() - 3) + (r // 2,)
    cos, sin = angles.cos().view(shape), angles.sin().view(shape)
    if mistake == "rope_cos_sin_swapped":
        cos, sin = sin, cos
    xf = x.float()
    if mistake == "rope_rotate_half":
        x1, x2 = xf[..., : r // 2], xf[..., r // 2 :]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)
    x1, x2 = xf[..., 0::2], xf[..., 1::2]
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., r/2, 2)
    return out.flatten(-2).to(x.dtype)
