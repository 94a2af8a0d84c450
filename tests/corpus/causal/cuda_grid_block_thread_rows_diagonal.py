# attnprep: causal
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""A CUDA programmer's habits: the mask filled by a grid of blocks of threads (blockIdx, blockDim,
threadIdx, an idle thread past the end), each thread owning one row."""
import math

import torch

BLOCK_DIM = 4


def causal_mask(seq_len, device=None):
    mask = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)
    grid_dim = (seq_len + BLOCK_DIM - 1) // BLOCK_DIM
    for block_idx in range(grid_dim):
        for thread_idx in range(BLOCK_DIM):
            row = block_idx * BLOCK_DIM + thread_idx
            if row >= seq_len:
                continue  # this thread idles
            mask[row, :row] = True
    return mask


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    allowed = causal_mask(T, device=q.device)[None, None]  # (1, 1, T, T)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 21
