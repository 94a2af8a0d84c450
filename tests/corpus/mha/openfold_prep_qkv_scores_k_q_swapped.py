# attnprep: mha
# expect: wrong_output
# diagnosis: scores_k_q_swapped
"""OpenFold / AlphaFold-2 habits (openfold/model/primitives.py), its linear_q / linear_k / linear_v /
linear_o under the contract's names, a _prep_qkv(q_x, kv_x) that returns [*, H, T, C_hidden]
tensors with the query already divided by sqrt(c_hidden), permute_final_dims helpers, and the masks turned into a list of additive
`biases` (inf * (mask - 1)) summed into the logits. The logits are taken as key @ queryᵀ (its
permute_final_dims applied to the wrong operand), so row i holds key i against every query."""

import math
from typing import List, Optional

import torch
import torch.nn as nn


def permute_final_dims(tensor: torch.Tensor, inds: List[int]) -> torch.Tensor:
    zero_index = -1 * len(inds)
    first_inds = list(range(len(tensor.shape[:zero_index])))
    return tensor.permute(first_inds + [zero_index + i for i in inds])


def flatten_final_dims(t: torch.Tensor, no_dims: int) -> torch.Tensor:
    return t.reshape(t.shape[:-no_dims] + (-1,))


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.c_hidden = d_model // num_heads
        self.no_heads = num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)
        self.inf = 1e9

    def _prep_qkv(self, q_x: torch.Tensor, kv_x: torch.Tensor):
        q = self.q_proj(q_x)
        k = self.k_proj(kv_x)
        v = self.v_proj(kv_x)
        # [*, Q/K, H, C_hidden]
        q = q.view(q.shape[:-1] + (self.no_heads, -1))
        k = k.view(k.shape[:-1] + (self.no_heads, -1))
        v = v.view(v.shape[:-1] + (self.no_heads, -1))
        # [*, H, Q/K, C_hidden]
        q = q.transpose(-2, -3)
        k = k.transpose(-2, -3)
        v = v.transpose(-2, -3)
        q = q / math.sqrt(self.c_hidden)
        return q, k, v

    def _attention(self, query, key, value, biases: List[torch.Tensor]):
        # [*, H, Q, K]
        a = torch.matmul(key, permute_final_dims(query, (1, 0)))
        for b in biases:
            a = a + b
        a = torch.softmax(a, dim=-1)
        # [*, H, Q, C_hidden]
        return torch.matmul(a, value)

    def forward(self, x, attention_mask: Optional[torch.Tensor] = None, is_causal: bool = False):
        T = x.shape[-2]
        biases = []
        if attention_mask is not None:
            mask = attention_mask.to(x.dtype)[:, None, None, :]  # [*, 1, 1, K]
            biases.append(self.inf * (mask - 1))
        if is_causal:
            tri = torch.ones(T, T, device=x.device, dtype=x.dtype).tril()
            biases.append(self.inf * (tri - 1))
        q, k, v = self._prep_qkv(x, x)
        o = self._attention(q, k, v, biases)
        o = o.transpose(-2, -3)  # [*, Q, H, C_hidden]
        o = flatten_final_dims(o, 2)
        return self.o_proj(o)
# bug-line: 55
