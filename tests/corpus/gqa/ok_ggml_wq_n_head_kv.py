# attnprep: gqa
# expect: passed
"""llama.cpp's llm_build_kqv read back into torch: ggml names (wq, wk, wv, wo, n_head, n_head_kv,
n_embd_head, kq_scale), the ggml order of axes ne = [n_embd_head, n_tokens, n_head] kept by working
on (H, T, D) per batch row, and the KV heads broadcast with a view instead of repeat: correct."""

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.n_head, self.n_head_kv = num_heads, num_kv_heads
        self.n_embd_head = d_model // num_heads
        self.n_gqa = num_heads // num_kv_heads
        self.wq = nn.Linear(d_model, d_model)
        self.wk = nn.Linear(d_model, num_kv_heads * self.n_embd_head)
        self.wv = nn.Linear(d_model, num_kv_heads * self.n_embd_head)
        self.wo = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def build_kqv(self, Qcur, Kcur, Vcur, kq_mask):
        # Qcur (n_head, T, D); Kcur, Vcur (n_head_kv, T, D); kq_mask (T, T) additive
        n_tokens = Qcur.shape[1]
        q = Qcur.view(self.n_head_kv, self.n_gqa, n_tokens, self.n_embd_head)
        kq = torch.matmul(q, Kcur[:, None].transpose(-1, -2))  # (n_head_kv, n_gqa, T, T)
        kq_scale = 1.0 / float(self.n_embd_head) ** 0.5
        kq = torch.softmax(kq * kq_scale + kq_mask, dim=-1)  # ggml_soft_max_ext(kq, mask, scale)
        kqv = torch.matmul(self.drop(kq), Vcur[:, None])  # (n_head_kv, n_gqa, T, D)
        return kqv.reshape(self.n_head, n_tokens, self.n_embd_head)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, n_tokens, n_embd = x.shape
        outs = []
        for b in range(B):
            cur = x[b]
            Qcur = self.wq(cur).view(n_tokens, self.n_head, self.n_embd_head).transpose(0, 1)
            Kcur = self.wk(cur).view(n_tokens, self.n_head_kv, self.n_embd_head).transpose(0, 1)
            Vcur = self.wv(cur).view(n_tokens, self.n_head_kv, self.n_embd_head).transpose(0, 1)
            kq_mask = torch.zeros(n_tokens, n_tokens, dtype=x.dtype, device=x.device)
            if attention_mask is not None:
                kq_mask = kq_mask.masked_fill(~attention_mask[b][None, :], float("-inf"))
            if is_causal:
                kq_mask = kq_mask.masked_fill(torch.ones_like(kq_mask, dtype=torch.bool).triu(1), float("-inf"))
            kqv = self.build_kqv(Qcur, Kcur, Vcur, kq_mask)
            outs.append(self.wo(kqv.transpose(0, 1).reshape(n_tokens, n_embd)))
        return torch.stack(outs)
