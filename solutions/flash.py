"""FlashAttention's forward pass (Dao et al. 2022, in the loop order of FlashAttention-2), in PyTorch.

softmax(q·kᵀ / sqrt(D))·v without ever holding the (L, S) score matrix: the queries are cut into
blocks of block_size rows, and each query block walks over the keys block by block with an online
softmax. Per query row it keeps a running max m, a running sum l of exp(score - m) and an
unnormalised output acc. When a new key block raises the max, everything accumulated so far was
measured against the old max, so l and acc are rescaled by exp(m_old - m_new) before the new
block's exp(score - m_new) and its weighted values are added. acc / l, once at the end, is exactly
the softmax-weighted sum of the values. With is_causal (top-left aligned, as torch's SDPA: query i
sees keys j <= i), key blocks entirely after a query block's last row are skipped and the block on
the diagonal is masked element by element.

The largest tensors are (block_size, block_size) tiles of scores and (block_size, D) accumulators:
the memory is O(L·D) instead of O(L·S), which is the whole point of the algorithm on a GPU, where
the tiles live in on-chip SRAM and the score matrix never goes to HBM.
"""

import math

import torch


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64
) -> torch.Tensor:
    """softmax(q·kᵀ / sqrt(D))·v, computed by blocks. q (B, H, L, D), k and v (B, H, S, D)."""
    B, H, L, D = q.shape
    S = k.shape[-2]
    scale = 1 / math.sqrt(D)
    blocks = []
    for i in range(0, L, block_size):  # one block of queries: rows i .. i + bq - 1
        q_blk = q[:, :, i : i + block_size] * scale  # (B, H, bq, D)
        bq = q_blk.shape[-2]
        m = torch.full((B, H, bq, 1), float("-inf"), dtype=q.dtype, device=q.device)  # running max
        l = torch.zeros(B, H, bq, 1, dtype=q.dtype, device=q.device)  # running sum of exp(s - m)
        acc = torch.zeros(B, H, bq, D, dtype=q.dtype, device=q.device)  # unnormalised output
        end = min(S, i + bq) if is_causal else S  # causal: no key after the block's last row
        for j in range(0, end, block_size):  # one block of keys: columns j .. j + bk - 1
            k_blk = k[:, :, j : j + block_size]  # (B, H, bk, D)
            v_blk = v[:, :, j : j + block_size]  # (B, H, bk, D)
            s = q_blk @ k_blk.transpose(-2, -1)  # (B, H, bq, bk)
            if is_causal and j + k_blk.shape[-2] > i + 1:  # the block reaches past row i's diagonal
                rows = torch.arange(i, i + bq, device=q.device)[:, None]  # (bq, 1)
                cols = torch.arange(j, j + k_blk.shape[-2], device=q.device)[None, :]  # (1, bk)
                s = s.masked_fill(cols > rows, float("-inf"))  # (bq, bk): key j after query i
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (B, H, bq, 1)
            p = torch.exp(s - m_new)  # (B, H, bq, bk)
            alpha = torch.exp(m - m_new)  # (B, H, bq, 1): what was summed under the old max
            l = alpha * l + p.sum(dim=-1, keepdim=True)
            acc = alpha * acc + p @ v_blk  # (B, H, bq, bk) @ (B, H, bk, D) -> (B, H, bq, D)
            m = m_new
        blocks.append(acc / l)  # normalised once, at the end
    return torch.cat(blocks, dim=2)  # (B, H, L, D)
