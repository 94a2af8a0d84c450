# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""Query, key and value tiles from torch.split, the key and value tiles zipped; Dutch names and
comments; every key tile visited (the causal mask does the work), and each tile's probabilities
divided by their own sum before they weigh the values."""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    schaal = 1.0 / math.sqrt(D)
    uitvoer = []
    for qi, q_tegel in zip(range(0, L, block_size), torch.split(q, block_size, dim=2)):
        n = q_tegel.shape[2]
        rijen = torch.arange(qi, qi + n, device=q.device)[:, None]
        m = torch.full((B, H, n, 1), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device)
        acc = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
        kj = 0
        for k_tegel, v_tegel in zip(torch.split(k, block_size, dim=2), torch.split(v, block_size, dim=2)):
            s = (q_tegel @ k_tegel.transpose(-2, -1)) * schaal
            if is_causal:  # sleutels na de query tellen niet mee
                kolommen = torch.arange(kj, kj + k_tegel.shape[2], device=q.device)[None, :]
                s = s.masked_fill(kolommen > rijen, float("-inf"))
            kj += k_tegel.shape[2]
            m_nieuw = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_nieuw)
            correctie = torch.exp(m - m_nieuw)
            l = correctie * l + p.sum(dim=-1, keepdim=True)
            p = p / p.sum(dim=-1, keepdim=True)  # kansen per tegel
            acc = correctie * acc + p @ v_tegel
            m = m_nieuw
        uitvoer.append(acc / l)
    return torch.cat(uitvoer, dim=2)
# bug-line: 33
