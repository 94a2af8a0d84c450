# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""A command-line-like options string split with shlex and read into a dict (--name value pairs),
the way a launcher passes flags; the window's slack was passed as 1, so each query sees window + 1
keys."""
import math
import shlex

import torch

OPTIONS_LINE = "--window-slack 1 --fill -inf"


def read_options(line):
    words = shlex.split(line)
    return {words[i].lstrip("-").replace("-", "_"): words[i + 1] for i in range(0, len(words), 2)}


OPTS = read_options(OPTIONS_LINE)


def sliding_window_mask(seq_len, window, device=None):
    i = torch.arange(seq_len, device=device)[:, None]
    j = torch.arange(seq_len, device=device)[None, :]
    reach = window + int(OPTS["window_slack"])
    return (j <= i) & (i - j < reach)


def sliding_window_attention(q, k, v, window, attention_mask=None):
    B, H, T, D = q.shape
    s = q @ k.transpose(-2, -1) / math.sqrt(D)
    ok = sliding_window_mask(T, window, q.device)
    if attention_mask is not None:
        ok = ok & attention_mask[:, None, None, :]
    s = s.masked_fill(~ok, float(OPTS["fill"]))
    return torch.softmax(s, dim=-1) @ v
# bug-line: 12
