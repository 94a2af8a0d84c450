# attnprep: alibi
# expect: wrong_output
# diagnosis: alibi_pow2_rule_ignored
"""BLOOM's modeling code: build_alibi_tensor from base / extra_base powers and the key positions
counted over real tokens (cumsum of the mask), slope * position_of_key added through baddbmm on
(B*H, T, D) tensors (the per-row constant it differs from -slope*(i-j) by cancels in the softmax)."""
import math

import torch


def alibi_slopes(num_heads):
    closest_power_of_2 = num_heads
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float32)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def build_alibi_tensor(attention_mask, num_heads, dtype):
    batch_size, seq_length = attention_mask.shape
    slopes = alibi_slopes(num_heads).to(attention_mask.device)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def alibi_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    if attention_mask is None:
        attention_mask = torch.ones(B, T, dtype=torch.long, device=q.device)
    attention_mask = attention_mask.long()
    alibi = build_alibi_tensor(attention_mask, H, q.dtype)          # (B*H, 1, T)
    query = q.reshape(B * H, T, D)
    key = k.reshape(B * H, T, D).transpose(1, 2)
    scores = alibi.baddbmm(batch1=query, batch2=key, beta=1.0, alpha=1.0 / math.sqrt(D))
    scores = scores.view(B, H, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    allowed = causal & attention_mask.bool()[:, None, None, :]
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return (probs.reshape(B * H, T, T).bmm(v.reshape(B * H, T, D))).view(B, H, T, D)
# bug-line: 13
