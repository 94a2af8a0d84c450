# attnprep: flash
# expect: wrong_output
# diagnosis: flash_max_not_carried
"""Hugging Face style: each key block's exponentials are taken against that block's own max and
summed as they are, with no running max carried from one block to the next."""
import math

import torch


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64
) -> torch.Tensor:
    bsz, num_heads, q_len, head_dim = q.shape
    kv_len = k.shape[2]
    scaling = head_dim ** -0.5
    attn_output = torch.zeros_like(q)
    for q_start in range(0, q_len, block_size):
        q_end = min(q_start + block_size, q_len)
        query_states = q[:, :, q_start:q_end] * scaling
        denominator = torch.zeros(bsz, num_heads, q_end - q_start, 1, dtype=q.dtype, device=q.device)
        numerator = torch.zeros(bsz, num_heads, q_end - q_start, head_dim, dtype=q.dtype, device=q.device)
        kv_stop = min(q_end, kv_len) if is_causal else kv_len
        for k_start in range(0, kv_stop, block_size):
            k_end = min(k_start + block_size, kv_len)
            attn_weights = torch.matmul(query_states, k[:, :, k_start:k_end].transpose(2, 3))
            if is_causal:
                causal = torch.arange(k_start, k_end, device=q.device)[None, :] > torch.arange(q_start, q_end, device=q.device)[:, None]
                attn_weights = attn_weights.masked_fill(causal, float("-inf"))
            block_max = attn_weights.amax(dim=-1, keepdim=True).clamp_min(-1e30)
            exp_weights = torch.exp(attn_weights - block_max)
            denominator = denominator + exp_weights.sum(dim=-1, keepdim=True)
            numerator = numerator + torch.matmul(exp_weights, v[:, :, k_start:k_end])
        attn_output[:, :, q_start:q_end] = numerator / denominator
    return attn_output
