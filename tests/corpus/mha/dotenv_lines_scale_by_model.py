# attnprep: mha
# expect: wrong_output
# diagnosis: scale_d_model
"""A .env file's habits (dotenv): KEY=VALUE lines kept as text, parsed by hand into os.environ-like
settings; ATTN_SCALE_BY was set to "model" where the head's width belongs."""
import math

import torch
import torch.nn as nn

DOTENV = """
ATTN_SCALE_BY=model
ATTN_MASK_FILL=-1e9
"""


def load_env(text):
    env = {}
    for raw in text.strip().splitlines():
        key, _, value = raw.partition("=")
        env[key.strip()] = value.strip()
    return env


ENV = load_env(DOTENV)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.d = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        width = self.d if ENV["ATTN_SCALE_BY"] == "head" else d_model
        self.scale = 1.0 / math.sqrt(width)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.d).transpose(1, 2)
        s = q @ k.transpose(-2, -1) * self.scale
        fill = float(ENV["ATTN_MASK_FILL"])
        if attention_mask is not None:
            s = s.masked_fill(~attention_mask[:, None, None, :], fill)
        if is_causal:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), fill)
        return self.o_proj((s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C))
# bug-line: 12
