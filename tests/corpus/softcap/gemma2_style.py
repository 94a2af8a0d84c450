# attnprep: softcap
# expect: passed
"""Gemma-2's eager attention, trimmed: scaling folded into q, softcapping as in modeling_gemma2."""
import torch


def softcap_causal_mask(seq_len, device=None):
    return torch.ones(seq_len, seq_len, dtype=torch.bool, device=device).tril()


def softcap_attention(q, k, v, softcap, attention_mask=None):
    scaling = q.shape[-1] ** -0.5
    attn_weights = torch.matmul(q * scaling, k.transpose(2, 3))
    attn_weights = attn_weights / softcap
    attn_weights = torch.tanh(attn_weights)
    attn_weights = attn_weights * softcap
    T = q.shape[-2]
    causal = softcap_causal_mask(T, device=q.device)
    attn_weights = attn_weights.masked_fill(~causal, torch.finfo(attn_weights.dtype).min)
    if attention_mask is not None:
        attn_weights = attn_weights.masked_fill(~attention_mask[:, None, None, :], torch.finfo(attn_weights.dtype).min)
    attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(attn_weights, v)
