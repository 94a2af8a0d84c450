# attnprep: alibi
# expect: mask_leak
# diagnosis: padding_mask_on_queries
"""BLOOM's build_alibi_tensor (slopes by the closest power of two, bias slope * key position added by
baddbmm with beta=1: the same attention as -slope * (i - j)), with the padding mask laid on the
query axis ([:, None, :, None]) instead of the keys. (Before: blamed at the scores, which hold the
reference's up to one number per row.)"""
import math
import torch


def alibi_slopes(num_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float32)
        num_remaining = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    slopes = alibi_slopes(H).to(q.device)
    pos = torch.arange(T, device=q.device, dtype=torch.float32)
    alibi = (slopes[:, None] * pos[None, :]).to(q.dtype)  # (H, T): slope * j
    alibi = alibi[None, :, None, :].expand(B, H, 1, T).reshape(B * H, 1, T)
    scores = torch.baddbmm(alibi, q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2),
                           beta=1.0, alpha=1.0 / math.sqrt(D)).view(B, H, T, T)
    keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()[None, None]
    if attention_mask is not None:
        keep = keep & attention_mask[:, None, :, None].bool()
    scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return probs @ v
# bug-line: 35
