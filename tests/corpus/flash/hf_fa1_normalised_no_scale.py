# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block + missing_scale
"""Hugging Face style, FA-1's update written from memory: the output divided by the new running sum
inside the loop without diag(l_old), and the scores never scaled by 1/sqrt(head_dim)."""
from typing import List

import torch


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64
) -> torch.Tensor:
    bsz, num_heads, q_len, head_dim = q.shape
    kv_len = k.shape[2]
    pieces: List[torch.Tensor] = []
    for q_start in range(0, q_len, block_size):
        query_states = q[:, :, q_start:q_start + block_size]
        q_block_len = query_states.shape[2]
        running_max = torch.full((bsz, num_heads, q_block_len, 1), float("-inf"), dtype=q.dtype, device=q.device)
        running_sum = torch.zeros(bsz, num_heads, q_block_len, 1, dtype=q.dtype, device=q.device)
        attn_output = torch.zeros_like(query_states)
        for k_start in range(0, kv_len, block_size):
            if is_causal and k_start >= q_start + q_block_len:
                break
            key_states = k[:, :, k_start:k_start + block_size]
            value_states = v[:, :, k_start:k_start + block_size]
            attn_weights = torch.matmul(query_states, key_states.transpose(2, 3))
            if is_causal:
                q_pos = torch.arange(q_start, q_start + q_block_len, device=q.device)[:, None]
                k_pos = torch.arange(k_start, k_start + key_states.shape[2], device=q.device)[None, :]
                attn_weights = attn_weights.masked_fill(k_pos > q_pos, float("-inf"))
            new_max = torch.maximum(running_max, attn_weights.amax(dim=-1, keepdim=True))
            exp_weights = torch.exp(attn_weights - new_max)
            correction = torch.exp(running_max - new_max)
            running_sum = correction * running_sum + exp_weights.sum(dim=-1, keepdim=True)
            attn_output = (correction * attn_output + torch.matmul(exp_weights, value_states)) / running_sum
            running_max = new_max
        pieces.append(attn_output)
    return torch.cat(pieces, dim=2)
