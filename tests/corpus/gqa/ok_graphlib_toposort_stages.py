# attnprep: gqa
# expect: passed
"""graphlib.TopologicalSorter habits (a Makefile of tensors): each stage names the stages it needs,
the sorter orders them, and forward fills a dict of results in that order."""
import math
from graphlib import TopologicalSorter

import torch
import torch.nn as nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, dropout=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.o_proj = nn.Linear(d_model, d_model)
        self.rules = {
            "q": (("x",), self.make_q),
            "k": (("x",), lambda env: self.make_kv(env, self.k_proj)),
            "v": (("x",), lambda env: self.make_kv(env, self.v_proj)),
            "scores": (("q", "k"), self.make_scores),
            "probs": (("scores", "allowed"), self.make_probs),
            "out": (("probs", "v"), self.make_out),
        }
        graph = {name: set(deps) for name, (deps, _) in self.rules.items()}
        self.order = [n for n in TopologicalSorter(graph).static_order() if n in self.rules]

    def make_q(self, env):
        B, T, _ = env["x"].shape
        return self.q_proj(env["x"]).view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def make_kv(self, env, proj):
        B, T, _ = env["x"].shape
        t = proj(env["x"]).view(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        return t.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)  # (B, H, T, D)

    def make_scores(self, env):
        return env["q"] @ env["k"].transpose(-2, -1) / math.sqrt(self.head_dim)

    def make_probs(self, env):
        return env["scores"].masked_fill(~env["allowed"], float("-inf")).softmax(dim=-1)

    def make_out(self, env):
        B, H, T, D = env["probs"].shape[0], self.num_heads, env["probs"].shape[2], self.head_dim
        return self.o_proj((env["probs"] @ env["v"]).transpose(1, 2).reshape(B, T, H * D))

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, _ = x.shape
        allowed = torch.ones(B, 1, T, T, dtype=torch.bool, device=x.device)
        if attention_mask is not None:
            allowed = allowed & attention_mask[:, None, None, :]
        if is_causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        env = {"x": x, "allowed": allowed}
        for name in self.order:
            env[name] = self.rules[name][1](env)
        return env["out"]
