# attnprep: mha
# expect: passed
# diffusers' Attention + AttnProcessor split: the module holds to_q/to_k/to_v and to_out (a ModuleList
# of Linear and Dropout); a processor object does the math with head_to_batch_dim / baddbmm(beta=0).
import torch
import torch.nn as nn


class AttnProcessor:
    def __call__(self, attn, hidden_states, attention_mask=None, is_causal=False):
        B, T, _ = hidden_states.shape
        query = attn.head_to_batch_dim(attn.to_q(hidden_states))
        key = attn.head_to_batch_dim(attn.to_k(hidden_states))
        value = attn.head_to_batch_dim(attn.to_v(hidden_states))
        probs = attn.get_attention_scores(query, key, attn.prepare_attention_mask(attention_mask, is_causal, B, T, query.dtype))
        hidden_states = attn.batch_to_head_dim(torch.bmm(probs, value))
        hidden_states = attn.to_out[0](hidden_states)
        return attn.to_out[1](hidden_states)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.heads = num_heads
        self.scale = (d_model // num_heads) ** -0.5
        self.to_q = nn.Linear(d_model, d_model)
        self.to_k = nn.Linear(d_model, d_model)
        self.to_v = nn.Linear(d_model, d_model)
        self.to_out = nn.ModuleList([nn.Linear(d_model, d_model), nn.Dropout(dropout)])
        self.processor = AttnProcessor()

    def head_to_batch_dim(self, t):
        b, n, dim = t.shape
        t = t.reshape(b, n, self.heads, dim // self.heads).permute(0, 2, 1, 3)
        return t.reshape(b * self.heads, n, dim // self.heads)

    def batch_to_head_dim(self, t):
        bh, n, d = t.shape
        t = t.reshape(bh // self.heads, self.heads, n, d).permute(0, 2, 1, 3)
        return t.reshape(bh // self.heads, n, d * self.heads)

    def prepare_attention_mask(self, attention_mask, is_causal, B, T, dtype):
        bias = torch.zeros(B, 1, T, T, dtype=dtype, device=self.to_q.weight.device)
        neg = torch.finfo(dtype).min
        if attention_mask is not None:
            bias = bias.masked_fill(~attention_mask[:, None, None, :], neg)
        if is_causal:
            bias = bias.masked_fill(torch.ones(T, T, dtype=torch.bool, device=bias.device).triu(1), neg)
        return bias.expand(B, self.heads, T, T).reshape(B * self.heads, T, T)

    def get_attention_scores(self, query, key, attention_mask):
        scores = torch.baddbmm(attention_mask, query, key.transpose(-1, -2), beta=1, alpha=self.scale)
        return scores.softmax(dim=-1)

    def forward(self, x, attention_mask=None, is_causal=False):
        return self.processor(self, x, attention_mask, is_causal)
