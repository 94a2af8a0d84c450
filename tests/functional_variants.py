"""The attention mistakes as the grader computed them before they were edits of the references
(issue 25): functional forms with one knob per mistake, kept here as the fixed twin the edited
references are held to (tests/test_edits_equivalence.py, tests/test_ex_alibi.py, and
:func:`blocked`, FlashAttention's forward by blocks, for tests/test_ex_flash.py).

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


# --- FlashAttention by blocks, as grader/kinds/blocked_attention.py had it ------------------------


def blocked(q, k, v, is_causal: bool, block: int, mistake="", fill: float = float("-inf"), every_block=None):
    """FlashAttention's forward by blocks of ``block`` queries and keys, with one mistake or two
    (``mistake`` a knob or a tuple of two: :func:`variants.slips`).

    A knob ending in ``skip`` (and the reference's own loop) leaves out the key blocks entirely after
    a query block's last row; the others visit every key block and rely on the mask, which only
    differs when the mask itself is wrong. ``every_block`` (not the grader's: the equivalence test's)
    overrides that rule: True visits every key block, False skips those after the diagonal, whatever
    the knobs' names say."""
    B, H, L, D = q.shape
    S = k.shape[-2]
    mistake = slips(mistake)

    def made(mistake_id: str) -> bool:  # any sub-variant of the mistake
        return any(k.split(":")[0] == mistake_id for k in mistake)

    scale = head_scale(D, mistake)
    unmasked = mistake == "causal_ignored:skip"  # blocks after the diagonal skipped, no mask inside it
    if mistake == "causal_ignored":
        is_causal = False
    elif mistake == "causal_flag_inverted":
        is_causal = not is_causal
    skip = any(k.endswith("skip") for k in mistake) if every_block is None else not every_block
    shift = S - L if made("flash_causal_bottom_right") else 0  # aligned at the last key
    allowed_by = {  # key column c, query row r: True where the (wrong) mask lets the key through
        "flash_causal_off_by_one:diagonal": lambda c, r: c < r,
        "flash_causal_off_by_one:diagonal_skip": lambda c, r: c < r,
        "flash_causal_off_by_one:next": lambda c, r: c <= r + 1,
        "flash_causal_off_by_one:next_skip": lambda c, r: c <= r + 1,
        "causal_inverted": lambda c, r: c >= r,
        "causal_inverted:skip": lambda c, r: c >= r,
        "causal_inverted:strict": lambda c, r: c > r,  # masked_fill(allowed): only later keys kept
        "causal_inverted:strict_skip": lambda c, r: c > r,
    }
    allowed = next((allowed_by[k] for k in mistake if k in allowed_by), lambda c, r: c <= r + shift)
    local = made("flash_causal_local_mask")  # the tile's own triu(1): local, not global positions
    # each slip tested once here, not per block (a variant runs hundreds of times per search)
    max_zero, reset_skip = mistake == "flash_max_init_zero", mistake == "flash_max_not_carried:reset_skip"
    stops_before = mistake in ("flash_causal_off_by_one:block_short", "flash_causal_off_by_one:block_short_zero")
    block_long = mistake == "flash_causal_off_by_one:block_long"
    past_block_skip = mistake == "flash_causal_off_by_one:past_block_skip"
    reference_loop = skip or not mistake
    fill_value = 0.0 if made("mask_fill_zero") else fill
    own_max = made("flash_max_not_carried") and not reset_skip
    before_rescale, unscaled = mistake == "flash_max_updated_before_rescale", mistake == "flash_max_not_carried:unscaled_skip"
    sum_kept, acc_kept = mistake == "flash_sum_not_rescaled", mistake == "flash_acc_not_rescaled"
    local_skip = mistake == "flash_normalised_per_block:local_skip"
    local_divided = mistake == "flash_normalised_per_block:local_divided_skip"
    local_clamped = mistake == "flash_normalised_per_block:local_clamped"
    weighted = mistake == "flash_normalised_per_block:weighted_skip"
    times_k, added = mistake == "attn_times_k", mistake == "flash_normalised_per_block:added"
    per_block = mistake in ("flash_normalised_per_block", "flash_normalised_per_block:skip", "flash_normalised_per_block:twice")
    unnormalised = mistake in ("flash_final_division_missing", "flash_normalised_per_block", "flash_normalised_per_block:skip",
                               "flash_normalised_per_block:local_skip", "flash_normalised_per_block:added")
    short_zero = mistake == "flash_causal_off_by_one:block_short_zero"
    blocks = []
    for ib, i in enumerate(range(0, L, block)):
        q_blk = q[:, :, i : i + block]
        bq = q_blk.shape[-2]
        m = torch.full((B, H, bq, 1), 0.0 if max_zero else float("-inf"), dtype=q.dtype)
        l = torch.zeros(B, H, bq, 1, dtype=q.dtype)
        acc = torch.zeros(B, H, bq, D, dtype=q.dtype)
        for jb, j in enumerate(range(0, S, block)):
            if reset_skip:
                m = torch.full_like(m, float("-inf"))  # started again in every key block: exp(m - m_new) is 0
            if is_causal:
                if stops_before and jb >= ib:
                    continue  # the loop stops before the diagonal block
                if block_long and jb > ib + 1:
                    continue  # … or one block after it
                if reference_loop and j > i + bq - 1 + shift:
                    continue
            k_blk, v_blk = k[:, :, j : j + block], v[:, :, j : j + block]
            s = (q_blk @ k_blk.transpose(-2, -1)) * scale  # (B, H, bq, bk)
            # the tile masked only when it reaches past the query block's last row (not its first):
            # a square tile on the diagonal goes unmasked
            past_block = past_block_skip and j + k_blk.shape[-2] <= i + bq
            if is_causal and not unmasked and not past_block and not (block_long and jb != ib):
                r = torch.arange(i, i + bq)[:, None]
                c = torch.arange(j, j + k_blk.shape[-2])[None, :]
                blocked_out = (c - j) > (r - i) if local else ~allowed(c, r)
                s = s.masked_fill(blocked_out, fill_value)
            if own_max:
                m_new = s.amax(dim=-1, keepdim=True)  # this block's max only
            else:
                m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            # the max updated before the rescale factor is taken: exp(m_new - m_new), 1 (NaN where -inf)
            alpha = torch.exp((m_new if before_rescale else m) - m_new)
            if unscaled:
                alpha = torch.ones_like(alpha)  # each block's exponentials against its own max, summed as they are
            l_new = p.sum(-1, keepdim=True) + (l if sum_kept else alpha * l)
            if local_skip:
                p = p / p.sum(-1, keepdim=True)  # each block's own softmax, weighted by alpha only
            elif local_clamped:  # … its sum clamped: an underflowed block adds 0
                p = p / p.sum(-1, keepdim=True).clamp_min(1e-30)
            elif local_divided:  # … taken against the block's own max
                p = torch.softmax(s, dim=-1)
            elif weighted:  # … weighted by exp(m_blk - m_new) too
                p = torch.softmax(s, dim=-1) * torch.exp(s.amax(dim=-1, keepdim=True) - m_new)
            pv = p @ (k_blk if times_k else v_blk)
            if added:
                pv = pv / l_new  # each block's share divided by the sum so far as it is added, never again
            acc = pv + (acc if acc_kept else alpha * acc)
            if per_block:
                acc = acc / l_new  # FlashAttention-1's update without the old sum's factor
            l, m = l_new, m_new
        if unnormalised:
            blocks.append(acc)
        elif short_zero:  # a row that saw no key keeps its zeros
            blocks.append(torch.where(l > 0, acc / l, torch.zeros_like(acc)))
        else:
            blocks.append(acc / l)
    return torch.cat(blocks, dim=2)  # (B, H, L, D)
