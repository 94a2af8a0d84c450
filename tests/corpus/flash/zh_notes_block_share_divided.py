# attnprep: flash
# expect: wrong_output
# diagnosis: flash_normalised_per_block
"""面经笔记风格（中文注释）：每个 key 块的 p @ v 在累加时就除以当时的累计和，最后不再统一除。"""
import math

import torch


def flash_attention(q, k, v, is_causal=False, block_size=64):
    B, H, L, D = q.shape
    S = k.shape[2]
    res = []
    for qs in range(0, L, block_size):
        Q = q[:, :, qs:qs + block_size] / math.sqrt(D)  # 先乘缩放
        n = Q.shape[2]
        mx = torch.full((B, H, n, 1), float("-inf"), device=q.device)  # 行最大值
        den = torch.zeros(B, H, n, 1, device=q.device)  # 行累计和
        o = torch.zeros(B, H, n, D, device=q.device)
        for ks in range(0, S, block_size):
            if is_causal and ks >= qs + n:  # 整块都在未来，跳过
                break
            Kb, Vb = k[:, :, ks:ks + block_size], v[:, :, ks:ks + block_size]
            s = Q @ Kb.transpose(-1, -2)
            if is_causal:
                fut = torch.arange(ks, ks + Kb.shape[2], device=q.device)[None, :] > torch.arange(qs, qs + n, device=q.device)[:, None]
                s = s.masked_fill(fut, float("-inf"))
            mx_new = torch.maximum(mx, s.amax(-1, keepdim=True))
            e = torch.exp(s - mx_new)
            r = torch.exp(mx - mx_new)  # 旧最大值到新最大值的修正
            den = den * r + e.sum(-1, keepdim=True)
            o = o * r + (e @ Vb) / den  # 这一块的贡献直接归一化
            mx = mx_new
        res.append(o)
    return torch.cat(res, dim=2)
