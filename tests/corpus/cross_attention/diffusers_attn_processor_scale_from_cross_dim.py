# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""diffusers' Attention + AttnProcessor split: the module holds to_q / to_k / to_v / to_out (a
ModuleList of Linear and Dropout), heads, scale_qk and the helpers head_to_batch_dim /
batch_to_head_dim / get_attention_scores (baddbmm with beta 0); a processor object does the call.
The module's scale was derived from cross_attention_dim, the context's width."""
import torch
import torch.nn as nn


class AttnProcessor:
    def __call__(self, attn, hidden_states, encoder_hidden_states, attention_mask=None):
        query = attn.head_to_batch_dim(attn.to_q(hidden_states))
        key = attn.head_to_batch_dim(attn.to_k(encoder_hidden_states))
        value = attn.head_to_batch_dim(attn.to_v(encoder_hidden_states))
        mask = attn.prepare_attention_mask(attention_mask, query.shape[1], hidden_states.shape[0])
        probs = attn.get_attention_scores(query, key, mask)
        hidden = attn.batch_to_head_dim(torch.bmm(probs, value))
        hidden = attn.to_out[0](hidden)
        return attn.to_out[1](hidden)


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0, scale_qk=True):
        super().__init__()
        self.query_dim = d_model
        self.cross_attention_dim = d_context if d_context is not None else d_model
        self.heads = num_heads
        self.dim_head = d_model // num_heads
        self.scale_qk = scale_qk
        self.scale = self.cross_attention_dim ** -0.5 if self.scale_qk else 1.0
        self.to_q = nn.Linear(d_model, d_model)
        self.to_k = nn.Linear(self.cross_attention_dim, d_model)
        self.to_v = nn.Linear(self.cross_attention_dim, d_model)
        self.to_out = nn.ModuleList([nn.Linear(d_model, d_model), nn.Dropout(dropout)])
        self.processor = AttnProcessor()

    def head_to_batch_dim(self, tensor):
        b, n, _ = tensor.shape
        tensor = tensor.reshape(b, n, self.heads, self.dim_head).permute(0, 2, 1, 3)
        return tensor.reshape(b * self.heads, n, self.dim_head)

    def batch_to_head_dim(self, tensor):
        bh, n, d = tensor.shape
        tensor = tensor.reshape(bh // self.heads, self.heads, n, d).permute(0, 2, 1, 3)
        return tensor.reshape(bh // self.heads, n, self.heads * d)

    def prepare_attention_mask(self, attention_mask, target_length, batch_size):
        if attention_mask is None:
            return None
        additive = torch.zeros(attention_mask.shape, dtype=torch.float32, device=attention_mask.device)
        additive = additive.masked_fill(~attention_mask, float("-inf"))  # (B, S)
        return additive.repeat_interleave(self.heads, dim=0)[:, None, :]  # (B * heads, 1, S)

    def get_attention_scores(self, query, key, attention_mask=None):
        if attention_mask is None:
            baddbmm_input = torch.empty(query.shape[0], query.shape[1], key.shape[1], dtype=query.dtype, device=query.device)
            beta = 0
        else:
            baddbmm_input = attention_mask.to(query.dtype).expand(-1, query.shape[1], -1)
            beta = 1
        scores = torch.baddbmm(baddbmm_input, query, key.transpose(-1, -2), beta=beta, alpha=self.scale)
        return scores.softmax(dim=-1)

    def forward(self, x, context, context_mask=None):
        return self.processor(self, x, context, context_mask)
# bug-line: 32
