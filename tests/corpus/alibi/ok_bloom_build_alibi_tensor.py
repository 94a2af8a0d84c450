# attnprep: alibi
# expect: passed
"""Correct, BLOOM's way (transformers' modeling_bloom): build_alibi_tensor puts slope · position on
the keys only, positions from the attention mask's cumsum, and baddbmm adds it to the (B*H) scores
with beta=1.0, alpha=1/sqrt(D). Softmax ignores the per-row constant, so this equals -slope·(i - j)."""

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


def build_alibi_tensor(attention_mask, num_heads, dtype):
    batch_size, seq_length = attention_mask.shape
    slopes = alibi_slopes(num_heads).to(attention_mask.device)
    # positions counted over real tokens only: left padding starts each sample at 0
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def alibi_attention(q, k, v, attention_mask=None):
    batch_size, num_heads, q_length, head_dim = q.shape
    if attention_mask is None:
        attention_mask = torch.ones(batch_size, q_length, dtype=torch.long, device=q.device)
    alibi = build_alibi_tensor(attention_mask.long(), num_heads, q.dtype)  # (B*H, 1, T)
    query_layer = q.reshape(batch_size * num_heads, q_length, head_dim)
    key_layer = k.reshape(batch_size * num_heads, q_length, head_dim).transpose(1, 2)
    value_layer = v.reshape(batch_size * num_heads, q_length, head_dim)
    matmul_result = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=1.0, alpha=1.0 / math.sqrt(head_dim))
    attention_scores = matmul_result.view(batch_size, num_heads, q_length, q_length)

    causal = torch.ones(q_length, q_length, dtype=torch.bool, device=q.device).triu(1)
    blocked = causal[None, None] | ~attention_mask.bool()[:, None, None, :]
    attn_weights = attention_scores.masked_fill(blocked, torch.finfo(attention_scores.dtype).min)
    attention_probs = torch.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    context = torch.bmm(attention_probs.view(batch_size * num_heads, q_length, q_length), value_layer)
    return context.view(batch_size, num_heads, q_length, head_dim)
