# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""Interview notes style: each tile's softmax(s) @ v is added to the output with the rescale
factor, and the sum of those already-normalised pieces is divided by the running sum again."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    out = []
    for qi in range(0, L, block_size):
        Q = q[:, :, qi:qi + block_size]
        nq = Q.shape[2]
        m = torch.full((B, H, nq, 1), float("-inf"), device=q.device)
        den = torch.zeros(B, H, nq, 1, device=q.device)
        num = torch.zeros(B, H, nq, D, device=q.device)
        for kj in range(0, S, block_size):
            if is_causal and kj > qi + nq - 1:
                break
            K, V = k[:, :, kj:kj + block_size], v[:, :, kj:kj + block_size]
            s = Q @ K.transpose(-1, -2) / math.sqrt(D)
            if is_causal:
                fut = torch.arange(kj, kj + K.shape[2], device=q.device)[None] > torch.arange(qi, qi + nq, device=q.device)[:, None]
                s = s.masked_fill(fut, float("-inf"))
            m2 = torch.maximum(m, s.amax(-1, keepdim=True))
            e = torch.exp(s - m2)
            c = torch.exp(m - m2)
            den = den * c + e.sum(-1, keepdim=True)
            num = num * c + torch.softmax(s, dim=-1) @ V
            m = m2
        out.append(num / den)
    return torch.cat(out, 2)
