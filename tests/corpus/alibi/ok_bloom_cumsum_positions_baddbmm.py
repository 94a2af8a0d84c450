# attnprep: alibi
# expect: passed
"""Correct: BLOOM's build_alibi_tensor: slope * (key position over real tokens, cumsum - 1) as baddbmm's input; per query row it differs from -slope * (i - j) by a constant, which the softmax ignores."""
import math
import torch


def alibi_slopes(num_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), dtype=torch.float32)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def alibi_attention(q, k, v, attention_mask=None):
    """BLOOM: the bias is slope * (key position), positions counted over real tokens (cumsum);
    per query row it differs from -slope * (i - j) by a constant, which the softmax ignores."""
    B, H, T, D = q.shape
    if attention_mask is None:
        attention_mask = torch.ones(B, T, dtype=torch.bool, device=q.device)
    am = attention_mask.to(q.dtype)
    arange_tensor = ((am.cumsum(dim=-1) - 1) * am)[:, None, :]                     # (B, 1, T)
    alibi = alibi_slopes(H).to(q.device, q.dtype)[None, :, None] * arange_tensor    # (B, H, T)
    alibi = alibi.reshape(B * H, 1, T)
    scores = alibi.baddbmm(batch1=q.reshape(B * H, T, D), batch2=k.reshape(B * H, T, D).transpose(1, 2),
                           beta=1.0, alpha=1.0 / math.sqrt(D)).view(B, H, T, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    blocked = causal[None, None] | ~attention_mask[:, None, None, :]
    scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
    return probs @ v
