"""The attention mistakes as the grader computed them before they were edits of the references
(issue 25): functional forms with one knob per mistake, kept here as the fixed twin the edited
references are held to (tests/test_edits_equivalence.py, tests/test_ex_alibi.py).

With no knob :func:`attend` is scaled dot-product attention with a padding and a causal mask;
with a knob it computes what an attempt with exactly that mistake computes.
"""

from __future__ import annotations

import torch
from attnprep.grader.variants import MaskFills, band, head_scale, pick, slips


def attend(q, k, v, attention_mask, is_causal, scale, mistake="", fill=float("-inf"), window=None, bias=None):
    """Scaled dot-product attention on (B, H, T, D) with the masking, scores and output mistakes as
    knobs; ``window``: the causal mask is a sliding window of that many keys (see :func:`band`);
    ``bias``: an additive score bias broadcastable to (B, H, T, S), added to the scaled scores
    before the masks (a position bias such as ALiBi's)."""
    mistake = slips(mistake)
    T, S = q.shape[-2], k.shape[-2]
    if mistake == "scores_k_q_swapped":
        scores = (k @ q.transpose(-2, -1)) * scale  # (B, H, S, T): the transposed scores (T == S)
    else:
        scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, S)
    if bias is not None:
        scores = scores + bias
    if mistake == "causal_flag_inverted":
        is_causal = not is_causal
    ones = torch.ones(T, S, dtype=torch.bool, device=q.device)
    causal = ones  # True where the causal mask allows
    if is_causal and mistake != "causal_ignored":
        causal = band(T, S, window, mistake, q.device)
    real = ones[None, None]  # (1, 1, T, S): True where the padding mask allows
    if attention_mask is not None and mistake != "padding_mask_ignored":
        keep = ~attention_mask if mistake == "padding_mask_inverted" else attention_mask
        real = keep[:, None, :, None] if mistake == "padding_mask_on_queries" else keep[:, None, None, :]
    if attention_mask is not None and (mistake == "masks_combined_or" or (mistake == "masks_combined_or:causal" and is_causal)):
        # either mask lets the key through; without is_causal the causal mask is all True, so the
        # padding is ignored altogether (an attempt that starts from ones(T, T) and ORs the padding);
        # ":causal": the OR only when there is a causal mask to OR with (the padding alone otherwise)
        allowed = causal[None, None] | real
    else:
        allowed = causal[None, None] & real  # (B, 1, T, S)
    merged = False  # the two masks merged into one: one fill
    if mistake in ("causal_inverted:padding", "window_mask_inverted:padding") and is_causal:
        allowed = ~allowed
        merged = True
    merged = merged or mistake in ("masks_combined_or", "masks_combined_or:causal")
    dim = -2 if mistake == "softmax_wrong_dim" else -1
    if mistake == "attn_times_k":
        v = k  # the keys mixed instead of the values
    if mistake == "mask_after_softmax":
        return scores.softmax(dim=dim).masked_fill(~allowed, 0.0) @ v
    if mistake == "mask_after_softmax:causal":  # the padding before the softmax, the causal mask after it
        before = scores.masked_fill(~real, fill if isinstance(fill, float) else float("-inf"))
        return before.softmax(dim=dim).masked_fill(~causal[None, None], 0.0) @ v
    if isinstance(fill, MaskFills) and not merged:
        scores = fill.apply(scores, ~real, ~causal[None, None])
    else:
        scores = scores.masked_fill(~allowed, float(fill))
    zeroed = pick({  # filled with 0.0: padding is filled first, the causal fill overwrites it
        "mask_fill_zero": ~allowed,
        "mask_fill_zero:padding": ~real & causal,
        "mask_fill_zero:causal": ~causal[None, None],
    }, mistake)
    if zeroed is not None:
        scores = scores.masked_fill(zeroed, 0.0)
    return scores.softmax(dim=dim) @ v  # (B, H, T, Dv)


def masked(q, k, v, attention_mask, mistake="", fill=float("-inf"), window=None, bias=None):
    """Causal attention on (B, H, T, D) with a key padding mask; a sliding window of ``window``
    keys when given; ``bias`` added to the scaled scores (see :func:`attend`)."""
    mistake = slips(mistake)
    scale = head_scale(q.shape[-1], mistake)
    return attend(q, k, v, attention_mask, True, scale, mistake, fill, window, bias)
