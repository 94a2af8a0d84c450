# attnprep: flash
# expect: passed
"""面试手写笔记风格：外层按 query 分块，内层按 key 分块，running max / sum 用 (Br, 1) 的列向量保存，
最后一次性除以 l；因果时跳过完全在未来的 key 块。正确。"""

import math

import torch


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, block_size: int = 64) -> torch.Tensor:
    B, H, L, D = q.shape
    S = k.shape[-2]
    Br = Bc = block_size
    out = torch.empty_like(q)
    for i in range(0, L, Br):
        qi = q[:, :, i:i + Br] / math.sqrt(D)  # 先把 scale 乘到 q 上
        n = qi.shape[2]
        m = torch.full((B, H, n, 1), -torch.inf, dtype=q.dtype, device=q.device)  # 行最大值
        l = torch.zeros((B, H, n, 1), dtype=q.dtype, device=q.device)  # 行和
        o = torch.zeros((B, H, n, D), dtype=q.dtype, device=q.device)
        for j in range(0, S, Bc):
            if is_causal and j > i + n - 1:  # 整块都在未来
                break
            sij = qi @ k[:, :, j:j + Bc].transpose(-1, -2)
            if is_causal:
                qi_pos = torch.arange(i, i + n, device=q.device)[:, None]
                kj_pos = torch.arange(j, j + sij.shape[-1], device=q.device)[None, :]
                sij = sij.masked_fill(kj_pos > qi_pos, -torch.inf)
            m_new = torch.maximum(m, sij.amax(-1, keepdim=True))
            pij = (sij - m_new).exp()
            alpha = (m - m_new).exp()  # 旧的统计量要缩放
            l = alpha * l + pij.sum(-1, keepdim=True)
            o = alpha * o + pij @ v[:, :, j:j + Bc]
            m = m_new
        out[:, :, i:i + Br] = o / l
    return out
