# attnprep: softcap
# expect: wrong_output
# diagnosis: softcap_not_rescaled
"""Gemma-2 style, the multiply back by softcap forgotten."""
import torch


def softcap_causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def softcap_attention(q, k, v, softcap, attention_mask=None):
    scaling = q.shape[-1] ** -0.5
    attn_weights = torch.matmul(q * scaling, k.transpose(2, 3))
    attn_weights = torch.tanh(attn_weights / softcap)
    T = q.shape[-2]
    allowed = softcap_causal_mask(T, device=q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    attn_weights = attn_weights.masked_fill(~allowed, float("-inf"))
    return torch.softmax(attn_weights, dim=-1) @ v
# bug-line: 15
