"""The attention mistakes as the grader computed them before they were edits of the references
(issue 25): functional forms with one knob per mistake, kept here as the fixed twin the edited
references are held to (tests/test_edits_equivalence.py, tests/test_ex_alibi.py, and
:func:`blocked`, FlashAttention's forward by blocks, for tests/test_ex_flash.py).

With no knob :func:`attend` is scaled dot-product attention with a padding and a causal mask;
with a knob it computes what an attempt with exactly that mistake computes.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnprep.grader.variants import MaskFills


# --- the knob helpers the grader's functional variants used (grader/variants.py before every mistake
# was an edit of its reference), kept here with the twins that use them ---------------------------


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
    if mistake == "mask_after_softmax:padding":  # the causal mask before the softmax, the padding after it
        before = scores.masked_fill(~causal[None, None], fill if isinstance(fill, float) else float("-inf"))
        return before.softmax(dim=dim).masked_fill(~real, 0.0) @ v
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


def blocked(q, k, v, is_causal: bool, block: int, mistake="", fill: float = float("-inf"), every_block=None,
            fill_read: list | None = None):
    """FlashAttention's forward by blocks of ``block`` queries and keys, with one mistake or two
    (``mistake`` a knob or a tuple of two: :func:`variants.slips`).

    A knob ending in ``skip`` (and the reference's own loop) leaves out the key blocks entirely after
    a query block's last row; the others visit every key block and rely on the mask, which only
    differs when the mask itself is wrong. ``every_block`` (not the grader's: the equivalence test's)
    overrides that rule: True visits every key block, False skips those after the diagonal, whatever
    the knobs' names say. ``fill_read`` (a list, the equivalence test's): True appended each time a
    tile is filled, the one place ``fill`` is read (no tile filled: the result is the same for every
    fill, and the test computes it once for both)."""
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
    end_past = mistake == "flash_causal_off_by_one:end_past"  # keys up to i + bq, only the diagonal tile masked
    reference_loop = skip or not mistake
    fill_value = 0.0 if made("mask_fill_zero") else fill
    own_max = made("flash_max_not_carried") and not reset_skip
    before_rescale, unscaled = mistake == "flash_max_updated_before_rescale", mistake == "flash_max_not_carried:unscaled_skip"
    sum_kept, acc_kept = mistake == "flash_sum_not_rescaled", mistake == "flash_acc_not_rescaled"
    local_skip = mistake == "flash_normalised_per_block:local_skip"
    local_divided = mistake == "flash_normalised_per_block:local_divided_skip"
    local_clamped = mistake == "flash_normalised_per_block:local_clamped"
    local_all = mistake == "flash_normalised_per_block:local_all_blocks"  # every key block, divided at the end too
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
                if end_past and j > i + bq:
                    continue  # … or up to the key just after the query block
                if reference_loop and j > i + bq - 1 + shift:
                    continue
            k_blk, v_blk = k[:, :, j : j + block], v[:, :, j : j + block]
            s = (q_blk @ k_blk.transpose(-2, -1)) * scale  # (B, H, bq, bk)
            # the tile masked only when it reaches past the query block's last row (not its first):
            # a square tile on the diagonal goes unmasked
            past_block = past_block_skip and j + k_blk.shape[-2] <= i + bq
            if is_causal and not unmasked and not past_block and not ((block_long or end_past) and jb != ib):
                r = torch.arange(i, i + bq)[:, None]
                c = torch.arange(j, j + k_blk.shape[-2])[None, :]
                blocked_out = (c - j) > (r - i) if local else ~allowed(c, r)
                s = s.masked_fill(blocked_out, fill_value)
                if fill_read is not None:
                    fill_read.append(True)
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
            if local_skip or local_all:
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


# --- ALiBi's slopes and bias in functional form (the slope mistakes the kind named from them before
# they were edits of the reference: tests/test_ex_alibi.py holds the edits to these) ---------------------


def slopes(num_heads: int, mistake="") -> torch.Tensor:
    """float32 (H,): 2^(-8i/n) for i = 1..n, n the largest power of two <= H; the H - n others
    2^(-4(2i-1)/n) (every other slope of 2n heads), or what a slope mistake gives instead."""
    mistake = slips(mistake)

    start = 0 if {"alibi_slopes_from_zero", "alibi_slopes_from_zero:helper"} & set(mistake) else 1  # range(n) for range(1, n + 1)
    odd = 2 if "alibi_slopes_from_zero:helper" in mistake else 1  # the helper's 2n slopes from 0 too

    in_helper = "alibi_slopes_reversed:helper" in mistake  # reversed in the paper's helper: its 2n list too

    def geometric(n: int) -> list[float]:
        values = [2 ** (-8 * i / n) for i in range(start, n + start)]
        return values[::-1] if in_helper else values

    n = 2 ** int(math.floor(math.log2(num_heads)))
    if n == num_heads or mistake == "alibi_pow2_rule_ignored":
        values = geometric(num_heads)  # the power-of-two formula with H in place of n
    elif in_helper:
        values = geometric(n) + geometric(2 * n)[0::2][: num_heads - n]
    else:
        values = geometric(n) + [2 ** (-4 * (2 * i - odd) / n) for i in range(1, num_heads - n + 1)]
    if "alibi_slopes_reversed" in mistake:
        values = values[::-1]
    return torch.tensor(values, dtype=torch.float32)


def distance_bias(slope: torch.Tensor, T: int, form: str = "relative") -> torch.Tensor:
    """(H, T, T): slope_h times a per-key offset. ``relative``: -(i - j) (the reference);
    ``key_only``: j (BLOOM's build_alibi_tensor; per row it differs by a constant, so the softmax
    is the same); ``mpt``: j - (T - 1) (MPT's gen_alibi_bias); ``symmetric``: -|i - j|."""
    i = torch.arange(T, dtype=slope.dtype, device=slope.device)[:, None]
    j = torch.arange(T, dtype=slope.dtype, device=slope.device)[None, :]
    offset = {"relative": j - i, "key_only": j.expand(T, T), "mpt": (j - (T - 1)).expand(T, T),
              "symmetric": -(i - j).abs()}[form]
    return slope[:, None, None] * offset  # (H, 1, 1) * (T, T) -> (H, T, T)
