# attnprep: sdpa
# expect: wrong_output
# diagnosis: scale_argument_ignored
"""MLX's mx.fast.scaled_dot_product_attention semantics, written the MLX way (functional, swapaxes, logsumexp-free softmax) in torch."""
import torch


def softmax(x, dim=-1):
    x = x - x.max(axis=dim, keepdims=True).values
    ex = x.exp()
    return ex / ex.sum(axis=dim, keepdims=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    L, S = query.shape[-2], key.shape[-2]
    scale = query.shape[-1] ** -0.5
    scores = (query * scale) @ key.swapaxes(-1, -2)
    if is_causal:
        q_idx = torch.arange(L, device=query.device)[:, None]
        k_idx = torch.arange(S, device=query.device)[None]
        scores = torch.where(q_idx >= k_idx, scores, torch.finfo(scores.dtype).min)
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = torch.where(attn_mask, scores, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attn_mask
    return softmax(scores, dim=-1) @ value
# bug-line: 16
