# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""A functional core and a thin module (the "functional core, imperative shell" habit): every step a
pure module-level function taking tensors and numbers, the nn.Module only holding weights and
handing its sizes to them; the softmax scale worked out in forward from the input's width."""
import torch
import torch.nn as nn


def split_heads(t, num_heads):
    B, T, C = t.shape
    return t.view(B, T, num_heads, C // num_heads).transpose(1, 2)  # (B, H, T, D)


def merge_heads(t):
    B, H, T, D = t.shape
    return t.transpose(1, 2).reshape(B, T, H * D)


def attention_bias(attention_mask, is_causal, T, device):
    bias = torch.zeros(1, 1, T, T, device=device)
    if is_causal:
        bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=device).triu(1), float("-inf"))
    if attention_mask is not None:
        bias = bias.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
    return bias


def dot_product_attention(q, k, v, bias, scale):
    logits = (q @ k.transpose(-2, -1)) * scale
    logits = logits + bias
    return torch.softmax(logits, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        scale = x.shape[-1] ** -0.5
        q = split_heads(self.q_proj(x), self.num_heads)
        k = split_heads(self.k_proj(x), self.num_heads)
        v = split_heads(self.v_proj(x), self.num_heads)
        bias = attention_bias(attention_mask, is_causal, x.shape[1], x.device)
        out = dot_product_attention(q, k, v, bias, scale)
        return self.o_proj(merge_heads(out))
# bug-line: 46
