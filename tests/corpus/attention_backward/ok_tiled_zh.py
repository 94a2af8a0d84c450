# attnprep: attention_backward
# expect: passed
"""分块（tile）的 FlashAttention-2 反向，中文注释：外层按 key 块循环，每块算自己的 dk、dv，dq 累加。"""
import math

import torch


def attention_backward(q, k, v, dout, is_causal=False, block=2):
    L, S, D = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(D)
    # 前向：算出每行的 logsumexp 和输出 O（这里不分块，只为拿到统计量）
    s = q @ k.transpose(-1, -2) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(L, S, device=q.device).tril() == 0, float("-inf"))
    lse = torch.logsumexp(s, dim=-1, keepdim=True)  # (B, H, L, 1)
    o = torch.exp(s - lse) @ v
    delta = (dout * o).sum(-1, keepdim=True)  # D = rowsum(dO ⊙ O)
    dq = torch.zeros_like(q)
    dk = torch.zeros_like(k)
    dv = torch.zeros_like(v)
    rows = torch.arange(L, device=q.device)
    for j0 in range(0, S, block):  # 外层循环：key/value 块
        kj, vj = k[..., j0:j0 + block, :], v[..., j0:j0 + block, :]
        cols = torch.arange(j0, min(j0 + block, S), device=q.device)
        sij = q @ kj.transpose(-1, -2) * scale  # (B, H, L, Bc)
        if is_causal:
            sij = sij.masked_fill(cols[None, :] > rows[:, None], float("-inf"))
        pij = torch.exp(sij - lse)  # 用保存的 lse 重算概率
        dv[..., j0:j0 + block, :] = pij.transpose(-1, -2) @ dout
        dpij = dout @ vj.transpose(-1, -2)
        dsij = pij * (dpij - delta)  # softmax 的反向
        dq += dsij @ kj * scale  # dq 在各个 key 块之间累加
        dk[..., j0:j0 + block, :] = dsij.transpose(-1, -2) @ q * scale
    return dq, dk, dv
