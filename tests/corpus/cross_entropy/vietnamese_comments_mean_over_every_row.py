# attnprep: cross_entropy
# expect: wrong_output
# diagnosis: cross_entropy_mean_includes_ignored
"""Chú thích tiếng Việt (Vietnamese comments and names: mat_mat for the loss, hang for a row), the
log-sum-exp written out; the ignored rows zeroed but still counted in the mean."""
import torch


def cross_entropy(logits, targets, ignore_index=-100, label_smoothing=0.0):
    so_lop = logits.shape[-1]  # số lớp V
    x = logits.reshape(-1, so_lop)  # (N, V): mỗi hàng là một token
    y = targets.reshape(-1)
    lon_nhat = x.max(dim=-1, keepdim=True).values  # giá trị lớn nhất của mỗi hàng
    lse = lon_nhat + (x - lon_nhat).exp().sum(-1, keepdim=True).log()
    log_xs = x - lse  # log-softmax ổn định
    giu = y != ignore_index  # các hàng được tính
    chi_so = torch.where(giu, y, torch.zeros_like(y))
    mat_mat = -log_xs.gather(1, chi_so.unsqueeze(1)).squeeze(1)
    if label_smoothing > 0:
        deu = -log_xs.mean(-1)  # trung bình trên cả V lớp
        mat_mat = (1.0 - label_smoothing) * mat_mat + label_smoothing * deu
    mat_mat = torch.where(giu, mat_mat, torch.zeros_like(mat_mat))
    return mat_mat.sum() / y.numel()
# bug-line: 23
