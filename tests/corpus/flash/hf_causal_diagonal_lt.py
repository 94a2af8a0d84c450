# attnprep: flash
# expect: mask_leak
# diagnosis: flash_causal_off_by_one
"""Hugging Face style (type hints, torch.split, einsum): the causal test is `k_idx < q_idx`, so a
query never sees its own key."""
import math
from typing import Optional

import torch


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    block_size: int = 64,
) -> torch.Tensor:
    bsz, num_heads, q_len, head_dim = q.size()
    softmax_scale = 1.0 / math.sqrt(head_dim)
    outputs = []
    q_start = 0
    for query_states in q.split(block_size, dim=2):
        q_block_len = query_states.size(2)
        row_max: Optional[torch.Tensor] = None
        row_sum = torch.zeros(bsz, num_heads, q_block_len, 1, dtype=q.dtype, device=q.device)
        acc = torch.zeros_like(query_states)
        k_start = 0
        for key_states, value_states in zip(k.split(block_size, dim=2), v.split(block_size, dim=2)):
            k_block_len = key_states.size(2)
            if is_causal and k_start > q_start + q_block_len - 1:
                break
            attn_weights = torch.einsum("bhqd,bhkd->bhqk", query_states, key_states) * softmax_scale
            if is_causal:
                q_idx = torch.arange(q_start, q_start + q_block_len, device=q.device)
                k_idx = torch.arange(k_start, k_start + k_block_len, device=q.device)
                allowed = k_idx[None, :] < q_idx[:, None]
                attn_weights = attn_weights.masked_fill(~allowed, torch.finfo(attn_weights.dtype).min)
            block_max = attn_weights.amax(dim=-1, keepdim=True)
            new_max = block_max if row_max is None else torch.maximum(row_max, block_max)
            probs = torch.exp(attn_weights - new_max)
            if row_max is not None:
                correction = torch.exp(row_max - new_max)
                row_sum = row_sum * correction
                acc = acc * correction
            row_sum = row_sum + probs.sum(dim=-1, keepdim=True)
            acc = acc + torch.einsum("bhqk,bhkd->bhqd", probs, value_states)
            row_max = new_max
            k_start += k_block_len
        outputs.append(acc / row_sum)
        q_start += q_block_len
    return torch.cat(outputs, dim=2)
