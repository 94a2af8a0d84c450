# attnprep: causal
# expect: wrong_output
# diagnosis: causal_masks_diagonal
"""vLLM-style: causal attention computed sequence by sequence in a Python loop; the mask compares
`col >= row` where `col > row` belongs, so each query also loses itself."""

import math

import torch


def causal_mask(seq_len: int, device=None) -> torch.Tensor:
    row = torch.arange(seq_len, device=device).unsqueeze(1)
    col = torch.arange(seq_len, device=device).unsqueeze(0)
    blocked = col >= row
    return ~blocked


def causal_attention(q, k, v, attention_mask=None):
    num_seqs, num_heads, seq_len, head_size = q.shape
    scale = 1.0 / math.sqrt(head_size)
    allowed = causal_mask(seq_len, q.device)
    outputs = []
    for i in range(num_seqs):
        s = torch.einsum("hqd,hkd->hqk", q[i], k[i]) * scale
        seq_allowed = allowed
        if attention_mask is not None:
            seq_allowed = allowed & attention_mask[i].bool()[None, :]
        s = s.masked_fill(~seq_allowed, float("-inf"))
        p = torch.softmax(s, dim=-1)
        outputs.append(torch.einsum("hqk,hkd->hqd", p, v[i]))
    return torch.stack(outputs, dim=0)
# bug-line: 15
