# attnprep: causal
# expect: passed
"""Correct: a FlexAttention-like score_mod closure (causal and padding through torch.where) applied on broadcast (b, h, q, kv) index grids; 中文注释."""
import torch


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def make_score_mod(attention_mask):
    # FlexAttention 风格的 score_mod：被屏蔽的位置改成 -inf
    def score_mod(score, b, h, q_idx, kv_idx):
        keep = causal(b, h, q_idx, kv_idx)
        if attention_mask is not None:
            keep = keep & attention_mask[b, kv_idx]
        return torch.where(keep, score, -float("inf"))
    return score_mod


def causal_mask(seq_len, device=None):
    idx = torch.arange(seq_len, device=device)
    return causal(None, None, idx[:, None], idx[None, :])


def causal_attention(q, k, v, attention_mask=None):
    B, H, T, D = q.shape
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * D ** -0.5
    b = torch.arange(B, device=q.device).view(B, 1, 1, 1)
    h = torch.arange(H, device=q.device).view(1, H, 1, 1)
    qi = torch.arange(T, device=q.device).view(1, 1, T, 1)
    ki = torch.arange(T, device=q.device).view(1, 1, 1, T)
    scores = make_score_mod(attention_mask)(scores, b, h, qi, ki)
    return torch.einsum("bhqk,bhkd->bhqd", scores.softmax(-1), v)
