# attnprep: sdpa
# expect: mask_leak
# diagnosis: scale_value_dim + float_mask_multiplied
"""FlashInfer-ish names: sm_scale defaults to 1/sqrt(head_dim_vo) (the value width), and a float mask is
multiplied into the logits instead of added."""
import math
import torch


def softmax(x, dim=-1):
    m = torch.max(x, dim=dim, keepdim=True).values
    y = torch.exp(x - m)
    return y / torch.sum(y, dim=dim, keepdim=True)


def scaled_dot_product_attention(query, key, value, attn_mask=None, is_causal=False, scale=None):
    head_dim_vo = value.shape[-1]
    sm_scale = scale if scale is not None else 1.0 / math.sqrt(head_dim_vo)
    logits = torch.matmul(query, key.transpose(-1, -2)) * sm_scale
    if is_causal:
        L, S = logits.shape[-2:]
        logits = logits.masked_fill(torch.ones(L, S, dtype=torch.bool, device=logits.device).triu(1), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            logits = logits.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            logits = logits * attn_mask
    return torch.matmul(softmax(logits, dim=-1), value)
