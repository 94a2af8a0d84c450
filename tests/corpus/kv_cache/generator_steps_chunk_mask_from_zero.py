# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_mask_not_offset
"""Generator pipeline: forward() drains a chain of small generator stages (project, extend the cache,
attend), each yielding a dict of intermediates to the next, the way a streaming server composes
steps. The causal mask is built for the new tokens only."""
import math

import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv = num_heads, num_kv_heads
        self.hd = d_model // num_heads
        self.q_proj = nn.Linear(d_model, num_heads * self.hd)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.hd)
        self.o_proj = nn.Linear(num_heads * self.hd, d_model)

    def _project(self, states):
        for st in states:
            x = st["x"]
            B, T, _ = x.shape
            st["q"] = self.q_proj(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
            st["k"] = self.k_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
            st["v"] = self.v_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
            yield st

    def _extend(self, states):
        for st in states:
            if st["cache"] is not None:
                st["k"] = torch.cat([st["cache"][0], st["k"]], dim=2)
                st["v"] = torch.cat([st["cache"][1], st["v"]], dim=2)
            st["new_cache"] = (st["k"], st["v"])
            yield st

    def _attend(self, states):
        for st in states:
            q, k, v = st["q"], st["k"], st["v"]
            T, S = q.shape[2], k.shape[2]
            rep = self.n_heads // self.n_kv
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
            keep = torch.ones(T, S, dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
            out = scores.softmax(-1) @ v
            st["out"] = self.o_proj(out.transpose(1, 2).flatten(2))
            yield st

    def forward(self, x, cache=None):
        pipeline = self._attend(self._extend(self._project(iter([{"x": x, "cache": cache}]))))
        st = next(pipeline)
        return st["out"], st["new_cache"]
# bug-line: 47
