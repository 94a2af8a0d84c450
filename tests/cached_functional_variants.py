"""The cached modules' mistakes as the grader computed them before they were edits of the references
(issue 25): grader/cached_variants.py as it was, kept here as the fixed twin the edited references of
kv_cache and mla_decode are held to (tests/test_cached_edits_equivalence.py).

A step is one call of a prefill + decode script, with knobs: it takes the new tokens and the cache a
previous step returned and computes what an attempt with exactly the knob's bug computes, cache
included. With no knob a step is the reference. Knobs may come two at a time (variants.slips).

- :func:`gqa_step`: grouped-query attention with a (k, v) cache of ``num_kv_heads`` heads;
- :func:`mla_step`: DeepSeek's absorbed MLA with a (c_kv, k_pe) cache.

Both attend through :func:`attend_cached`: new token ``t`` sits at absolute position
``T_past + t`` and sees the keys ``0 .. T_past + t`` (the causal mask aligned bottom-right).
:func:`script` drives a step through a case's script of calls as ``CachedModule.variant`` did.
"""

from __future__ import annotations

import math

import torch
from attnprep.grader.kinds.cached_module import _laid_out, _layout, output_names
from functional_variants import _linear, _rms, head_scale, pick, rope, slips


def attend_cached(q, k, v, offset, scale, mistake="", fill=float("-inf")):
    """q (B, H, T, D) at positions offset .. offset+T-1 against k, v (B, H, S, ·), S = offset + T
    keys (in the order the attempt concatenated them); the mask and softmax mistakes as knobs."""
    mistake = slips(mistake)
    T, S = q.shape[-2], k.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, T, S)
    ones = torch.ones(T, S, dtype=torch.bool, device=q.device)
    if mistake == "causal_ignored" or (mistake == "cache_chunk_unmasked" and offset > 0):
        allowed = ones  # no mask at all, or only on the first call (the cache was None)
    elif mistake == "cache_mask_not_offset":
        allowed = torch.tril(ones)  # top-left: new token t sees keys 0 .. t
    elif mistake == "cache_mask_not_offset:chunk":
        # Meta's llama masks only when seqlen > 1: a one-token step is right, a chunk top-left
        allowed = torch.tril(ones) if T > 1 else ones
    elif mistake == "causal_inverted":
        allowed = torch.triu(ones, diagonal=offset)  # its own position and the future
    elif mistake == "causal_inverted:strict":
        allowed = torch.triu(ones, diagonal=offset + 1)  # masked_fill(tril(...)): only the future
    else:
        allowed = torch.tril(ones, diagonal=offset + pick({"causal_masks_diagonal": -1, "causal_leaks_next": 1}, mistake, 0))
    dim = -2 if mistake == "softmax_wrong_dim" else -1
    if mistake == "attn_times_k":
        v = k
    if mistake == "mask_after_softmax":
        return scores.softmax(dim=dim).masked_fill(~allowed, 0.0) @ v
    scores = scores.masked_fill(~allowed, 0.0 if mistake == "mask_fill_zero" else fill)
    return scores.softmax(dim=dim) @ v  # (B, H, T, ·)


def _concat(past, new, axis, mistake, which=""):
    """The cache tensor ``which`` grown by the new tokens on ``axis``: old first, or new first
    (prepended, for both tensors or for ``which`` one only)."""
    if past is None:
        return new
    prepended = mistake == "cache_prepended" or (which and mistake == f"cache_prepended:{which}")
    return torch.cat([new, past] if prepended else [past, new], dim=axis)


def gqa_step(config, weights, x, cache, mistake="", fill=float("-inf")):
    """One call of the cached GQA: x (B, T, C) new tokens, cache None or (k, v) (B, G, T_past, D)."""
    mistake = slips(mistake)
    B, T, C = x.shape
    H, G = config["num_heads"], config["num_kv_heads"]
    D = C // H

    def split(t, n):
        if mistake == "split_heads_no_transpose":
            return t.reshape(B, n, T, D)
        return t.view(B, T, n, D).transpose(1, 2)  # (B, n, T, D)

    q = split(_linear(weights, "q_proj", x), H)
    k = split(_linear(weights, "k_proj", x), G)
    v = split(_linear(weights, "v_proj", x), G)
    past_k, past_v = (None, None) if cache is None else cache
    if mistake == "cache_kv_swapped:unpacked" and cache is not None:  # past_v, past_k = cache
        past_k, past_v = past_v, past_k
    if mistake == "cache_layout" and cache is not None:  # kept as (B, T, G, D)
        past_k, past_v = past_k.transpose(1, 2), past_v.transpose(1, 2)
    k_all, v_all = _concat(past_k, k, 2, mistake, "k"), _concat(past_v, v, 2, mistake, "v")  # (B, G, S, D)
    if mistake == "cache_not_returned:new_only":
        returned = (k, v)
    elif mistake == "cache_layout":
        returned = (k_all.transpose(1, 2), v_all.transpose(1, 2))
    elif mistake == "cache_kv_swapped":  # return out, (v, k): the next call reads them as (k, v)
        returned = (v_all, k_all)
    else:
        returned = (k_all, v_all)
    n_rep = H // G
    tiled = {"gqa_heads_tiled": "kv", "gqa_heads_tiled:k": "k", "gqa_heads_tiled:v": "v"}
    which = pick(tiled, mistake, "")
    kr = k_all.repeat(1, n_rep, 1, 1) if "k" in which else k_all.repeat_interleave(n_rep, dim=1)
    vr = v_all.repeat(1, n_rep, 1, 1) if "v" in which else v_all.repeat_interleave(n_rep, dim=1)
    scale = head_scale(D, mistake, {"scale_d_model": 1 / math.sqrt(C)})
    out = attend_cached(q, kr, vr, k_all.shape[2] - T, scale, mistake, fill)  # (B, H, T, D)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, C)
    else:
        out = out.transpose(1, 2).reshape(B, T, C)
    if mistake != "output_proj_skipped":
        out = _linear(weights, "o_proj", out)
    return out, returned


def _rope_at(x, theta, start, mistake):
    """``variants.rope`` at the absolute positions start .. start+T-1 of x (B, T, *, r): the
    rotation of each position is its own, so x is rotated behind ``start`` zero rows."""
    if start == 0:
        return rope(x, theta, mistake)
    pad = x.new_zeros((x.shape[0], start) + tuple(x.shape[2:]))
    return rope(torch.cat([pad, x], dim=1), theta, mistake)[:, start:]


def wkv_b_read(w, H: int, F: int, c: int, layout: str):
    """``wkv_b``'s weight (H·F, c) read in another order of its axes, as (H, F, c): ``layout`` is
    ``w_`` (the weight) or ``t_`` (its transpose, (c, H·F)) followed by the order its storage is
    read in, e.g. ``w_fhc``: ``view(F, H, c)`` moved to heads first. ``w_hfc`` and ``t_chf`` are
    the right readings; the others take other rows for W_UK / W_UV."""
    source, order = layout.split("_")
    m = w if source == "w" else w.t()
    sizes = {"h": H, "f": F, "c": c}
    read = m.reshape(*(sizes[a] for a in order))
    return read.permute(*(order.index(a) for a in "hfc"))  # (H, F, c)


def _wkv_b_layout(knob: str) -> str:
    """The reading of ``wkv_b`` a knob names (``mla_absorb_rows:w_fhc`` -> ``w_fhc``), or ''."""
    mistake, _, part = knob.partition(":")
    return part if mistake in ("mla_absorb_rows", "mla_absorb_transpose") and part[:2] in ("w_", "t_") else ""


def mla_step(config, weights, x, cache, mistake="", fill=float("-inf")):
    """One call of the absorbed MLA: x (B, T, d_model), cache None or (c_kv (B, T_past, c),
    k_pe (B, T_past, rope))."""
    mistake = slips(mistake)
    B, T, _ = x.shape
    H = config["num_heads"]
    nope, r, dv, c = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"], config["kv_lora_rank"]
    theta = config.get("rope_theta", 10000.0)
    T_past = 0 if cache is None else cache[0].shape[1]
    start = 0 if mistake == "mla_rope_position_zero" else T_past
    q_start = 0 if mistake == "mla_rope_position_zero:q_pe" else start  # one rope part restarted at 0
    k_start = 0 if mistake == "mla_rope_position_zero:k_pe" else start

    skip_q = mistake in ("mla_norm_skipped", "mla_norm_skipped:q")
    skip_kv = mistake in ("mla_norm_skipped", "mla_norm_skipped:kv")
    eps = 1e-5 if mistake == "norm_eps_convention" else 1e-6  # the RMSNorms' eps by Llama's convention
    q = _linear(weights, "wq_b", _rms(weights, "q_norm", _linear(weights, "wq_a", x), skip_q, eps)).view(B, T, H, nope + r)
    if mistake == "mla_split_order:q":
        q_pe, q_nope = q.split([r, nope], dim=-1)
    else:
        q_nope, q_pe = q.split([nope, r], dim=-1)
    q_pe = _rope_at(q_pe, theta, q_start, mistake)  # (B, T, H, r)
    if mistake == "mla_split_order:kv_a":
        k_pe, c_new = _linear(weights, "wkv_a", x).split([r, c], dim=-1)
    else:
        c_new, k_pe = _linear(weights, "wkv_a", x).split([c, r], dim=-1)
    k_pe = _rope_at(k_pe.unsqueeze(2), theta, k_start, mistake).squeeze(2)  # (B, T, r)
    normed = _rms(weights, "kv_norm", c_new, skip_kv, eps)
    # the raw latent cached, the new tokens' normalised for this step only: the prefix is read back raw
    read_raw = mistake == "mla_cache_before_norm:read_raw"
    stored = c_new if mistake == "mla_cache_before_norm" or read_raw else normed  # what goes into the cache
    past_c, past_pe = (None, None) if cache is None else cache
    c_all, pe_all = _concat(past_c, stored, 1, mistake, "c_kv"), _concat(past_pe, k_pe, 1, mistake, "k_pe")  # (B, S, ·)
    returned = (stored, k_pe) if mistake == "cache_not_returned:new_only" else (c_all, pe_all)
    latent = _rms(weights, "kv_norm", c_all, False, eps) if mistake == "mla_cache_before_norm" else \
        _concat(past_c, normed, 1, mistake, "c_kv") if read_raw else c_all

    w = weights["wkv_b"]["weight"]  # (H·(nope+dv), c)
    if mistake == "mla_absorb_rows":  # [the key rows of every head; the value rows of every head]
        w_uk, w_uv = w[: H * nope].view(H, nope, c), w[H * nope:].view(H, dv, c)
    elif mistake == "mla_absorb_transpose":  # the (out, in) weight read as (in, out): view(c, H, nope+dv)
        wt = w.reshape(c, H, nope + dv)
        w_uk, w_uv = wt[..., :nope].permute(1, 2, 0), wt[..., nope:].permute(1, 2, 0)
    elif mistake == "mla_split_order:kv_b":
        w_uv, w_uk = w.view(H, nope + dv, c).split([dv, nope], dim=1)
    elif any(_wkv_b_layout(k) for k in mistake):  # the weight (or its transpose) read in another order
        layout = next(_wkv_b_layout(k) for k in mistake if _wkv_b_layout(k))
        w_uk, w_uv = wkv_b_read(w, H, nope + dv, c, layout).split([nope, dv], dim=1)
    else:
        w_uk, w_uv = w.view(H, nope + dv, c).split([nope, dv], dim=1)  # (H, nope, c), (H, dv, c)
    # one head's slice reshaped to (c, ·) where it needed a transpose, read back as (H, ·, c)
    if mistake == "mla_absorb_transpose:uk_view":
        w_uk = w_uk.reshape(H, c, nope).transpose(1, 2)
    elif mistake == "mla_absorb_transpose:uv_view":
        w_uv = w_uv.reshape(H, c, dv).transpose(1, 2)

    q_abs = torch.einsum("bshd,hdc->bshc", q_nope, w_uk)  # (B, T, H, c)
    query = torch.cat([q_abs, q_pe], dim=-1).transpose(1, 2)  # (B, H, T, c + r)
    key = torch.cat([latent, pe_all], dim=-1)[:, None]  # (B, 1, S, c + r): shared by every head
    scale = head_scale(nope + r, mistake, {
        "scale_d_model": x.shape[-1] ** -0.5,
        "mla_scale_sum_sqrt": 1 / (math.sqrt(nope) + math.sqrt(r)),
        "mla_scale_partial:nope": nope ** -0.5,
        "mla_scale_partial:rope": r ** -0.5,
        "mla_scale_partial:v": dv ** -0.5,
        "mla_scale_kv_rank": c ** -0.5,
        "mla_scale_kv_rank:row": (c + r) ** -0.5,  # the width of the [c_kv; k_pe] key row
    })
    H_key = key.expand(B, H, key.shape[2], key.shape[3])
    out = attend_cached(query, H_key, latent[:, None].expand(B, H, latent.shape[1], c), c_all.shape[1] - T,
                        scale, mistake, fill)  # (B, H, T, c): the weighted sum of the latents
    out = torch.einsum("bhsc,hdc->bhsd", out, w_uv)  # (B, H, T, dv)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, H * dv)
    else:
        out = out.transpose(1, 2).reshape(B, T, H * dv)
    if mistake != "output_proj_skipped":
        out = _linear(weights, "wo", out)
    return out, returned


STEPS = {"grouped": gqa_step, "latent": mla_step}  # exercise.toml [grading] step = … as it was


def script(kind, step, ci: int, zero_bias, knob, fill):
    """The old ``CachedModule.variant``: ``step`` with ``knob`` driven through a case's script of
    calls, each call's cache the one the previous call of its sequence returned (a replayed call
    given the same one again, a ``given`` call the kind's reference cache laid out as this variant's
    own); all outputs, name -> tensor."""
    config = kind.configs[ci]
    weights = kind.role_weights(ci, zero_bias)

    def run(case) -> dict[str, torch.Tensor]:
        outputs: dict[str, torch.Tensor] = {}
        given: dict = {}
        current: dict = {}
        for call in case.inputs["calls"]:
            if call.given:  # the reference's cache, laid out as this variant's own
                prefix = case.inputs[call.seq][:, :call.start]
                own = step(config, weights, prefix, None, knob, fill)[1]
                shapes = [kind.cache_shape(ci, spec, prefix.shape[0], call.start) for spec in kind.specs]
                current[call.seq] = tuple(_laid_out(t, _layout(tuple(o.shape), shape)) for t, o, shape
                                          in zip(kind.given_cache(ci, zero_bias, prefix), own, shapes))
            cache = given.get(call.seq) if call.replay else current.get(call.seq)
            given[call.seq] = cache
            out, returned = step(config, weights, case.inputs[call.seq][:, call.start:call.end], cache, knob, fill)
            current[call.seq] = returned
            outputs.update(zip(output_names(call, kind.specs), [out, *returned]))
        return outputs

    return run
