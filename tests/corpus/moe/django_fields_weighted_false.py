# attnprep: moe
# expect: wrong_output
# diagnosis: moe_weights_not_applied
"""Django model habits: the router's options are Field declarations on the class
(IntegerField(default=...), BooleanField(default=...)) collected by a small metaclass-free
Model base; the "weighted" field's default was False, so the chosen experts are simply summed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Field:
    def __init__(self, default):
        self.default = default


class IntegerField(Field):
    pass


class BooleanField(Field):
    pass


class RouterOptions:
    renormalize = BooleanField(default=True)
    weighted = BooleanField(default=False)
    capacity = IntegerField(default=0)

    def __init__(self, **overrides):
        for name, field in vars(type(self)).items():
            if isinstance(field, Field):
                setattr(self, name, overrides.get(name, field.default))


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.options = RouterOptions()
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        tokens = x.view(-1, C)
        logits = self.gate(tokens)
        top_val, top_idx = logits.topk(self.top_k, dim=-1)
        w = top_val.softmax(-1) if self.options.renormalize else logits.softmax(-1).gather(-1, top_idx)
        if not self.options.weighted:
            w = torch.ones_like(w)
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slots = (top_idx == e).nonzero(as_tuple=True)
            if rows.numel():
                out.index_add_(0, rows, w[rows, slots].unsqueeze(-1) * expert(tokens[rows]))
        return out.view(B, T, C)
# bug-line: 27
