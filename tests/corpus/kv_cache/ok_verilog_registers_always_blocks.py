# attnprep: kv_cache
# expect: passed
"""A hardware (Verilog) designer's habits: registers (reg_*) and wires (w_*) named by kind, one
method per `always` block (always_project, always_append, always_attend) that reads wires and
drives registers, a `posedge` step that calls them in order, and widths spelled out in comments."""
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.P_HEADS = num_heads
        self.P_KV_HEADS = num_kv_heads
        self.P_HEAD_W = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.P_HEAD_W)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.P_HEAD_W)
        self.o_proj = nn.Linear(d_model, d_model)

    def always_project(self, w_x):
        b, t, _ = w_x.shape
        w_q = self.q_proj(w_x).view(b, t, self.P_HEADS, self.P_HEAD_W).transpose(1, 2)  # [b][H][t][D]
        w_k = self.k_proj(w_x).view(b, t, self.P_KV_HEADS, self.P_HEAD_W).transpose(1, 2)  # [b][KV][t][D]
        w_v = self.v_proj(w_x).view(b, t, self.P_KV_HEADS, self.P_HEAD_W).transpose(1, 2)
        return w_q, w_k, w_v

    def always_append(self, reg_cache, w_k, w_v):
        if reg_cache is None:
            return w_k, w_v, 0
        reg_k, reg_v = reg_cache
        return torch.cat((reg_k, w_k), 2), torch.cat((reg_v, w_v), 2), reg_k.shape[2]

    def always_attend(self, w_q, reg_k, reg_v, w_base):
        t, total = w_q.shape[2], reg_k.shape[2]
        w_group = self.P_HEADS // self.P_KV_HEADS
        w_kx = reg_k[:, :, None].expand(-1, -1, w_group, -1, -1).reshape(reg_k.shape[0], self.P_HEADS, total, self.P_HEAD_W)
        w_vx = reg_v[:, :, None].expand(-1, -1, w_group, -1, -1).reshape(reg_v.shape[0], self.P_HEADS, total, self.P_HEAD_W)
        w_row = torch.arange(t, device=w_q.device)[:, None] + w_base  # [t][1]
        w_col = torch.arange(total, device=w_q.device)[None, :]  # [1][total]
        w_s = torch.matmul(w_q, w_kx.transpose(2, 3)) * (1.0 / math.sqrt(self.P_HEAD_W))
        w_s = torch.where(w_col <= w_row, w_s, torch.full_like(w_s, -1e9))
        return torch.matmul(torch.softmax(w_s, dim=3), w_vx)

    def forward(self, x, cache=None):
        # posedge clk
        b, t, c = x.shape
        w_q, w_k, w_v = self.always_project(x)
        reg_k, reg_v, w_base = self.always_append(cache, w_k, w_v)
        w_y = self.always_attend(w_q, reg_k, reg_v, w_base)
        return self.o_proj(w_y.transpose(1, 2).reshape(b, t, c)), (reg_k, reg_v)
