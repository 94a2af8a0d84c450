# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one + scale_by_dim
"""A TensorFlow programmer's habits: a band_part(x, num_lower, num_upper) helper written to mirror
tf.linalg.band_part, `training`-free functions with keyword names as in Keras; the band's
num_lower set to window (window + 1 keys), and the scores divided by the head size."""
import torch


def band_part(x, num_lower, num_upper):
    """tf.linalg.band_part: keep x[i, j] where (num_lower < 0 or i - j <= num_lower) and
    (num_upper < 0 or j - i <= num_upper)."""
    n, m = x.shape[-2], x.shape[-1]
    i = torch.arange(n, device=x.device)[:, None]
    j = torch.arange(m, device=x.device)[None, :]
    lower_ok = (i - j <= num_lower) if num_lower >= 0 else torch.ones_like(i - j, dtype=torch.bool)
    upper_ok = (j - i <= num_upper) if num_upper >= 0 else torch.ones_like(i - j, dtype=torch.bool)
    return torch.where(lower_ok & upper_ok, x, torch.zeros_like(x))


def sliding_window_mask(seq_len, window, device=None):
    ones = torch.ones(seq_len, seq_len, device=device)
    return band_part(ones, num_lower=window, num_upper=0).bool()


def sliding_window_attention(q, k, v, window, attention_mask=None):
    T, key_dim = q.shape[-2], q.shape[-1]
    logits = torch.matmul(q, k.transpose(-1, -2)) / key_dim
    allowed = sliding_window_mask(T, window, device=q.device)
    if attention_mask is not None:
        allowed = allowed & attention_mask[:, None, None, :]
    logits = logits.masked_fill(~allowed, float("-inf"))
    weights = torch.softmax(logits, axis=-1)
    return torch.matmul(weights, v)
# bug-line: 23, 28
