# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""A Tcl programmer's habits: `set`-like assignments through a small dict of variables, `expr`
helpers, procs taking names of variables to update (upvar-style), `lassign` unpacking; the
window's lower edge compared with >= (window + 1 keys visible)."""
import math

import torch


def proc_lower_edge(vars_, name):
    # proc lower_edge {varName} { upvar $varName lo; set lo [expr {$i - $window}] }
    vars_[name] = vars_["i"] - vars_["window"]


def sliding_window_mask(seq_len, window, device=None):
    vars_ = {"window": window}
    vars_["i"] = torch.arange(seq_len, device=device)[:, None]
    vars_["j"] = torch.arange(seq_len, device=device)[None, :]
    proc_lower_edge(vars_, "lo")
    return (vars_["j"] >= vars_["lo"]) & (vars_["j"] <= vars_["i"])


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape  # lassign [$q shape] B H T D
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)
    allowed = sliding_window_mask(T, window, device=q.device)[None, None]
    if attention_mask is not None:
        allowed = allowed & attention_mask.bool()[:, None, None, :]
    scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)
# bug-line: 22
