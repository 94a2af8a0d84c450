# attnprep: sliding_window
# expect: mask_leak
# diagnosis: window_off_by_one
"""CSDN 手撕滑动窗口注意力：meshgrid 得到行列下标，index_put_ 把允许的位置写成 True，拼音变量名；
窗口条件写成 hang - lie <= window（多看了一个键）。"""
import math
import torch


def sliding_window_mask(seq_len, window, device=None):
    zhezhao = torch.zeros(seq_len, seq_len, dtype=torch.bool, device=device)  # 遮罩
    hang, lie = torch.meshgrid(torch.arange(seq_len, device=device),
                               torch.arange(seq_len, device=device), indexing="ij")  # 行（查询）、列（键）
    keyi = (lie <= hang) & (hang - lie <= window)  # 可以看的位置：因果 + 窗口内
    zhezhao.index_put_((hang[keyi], lie[keyi]), torch.tensor(True, device=device))
    return zhezhao


def sliding_window_attention(q, k, v, window, attention_mask=None):
    pi, tou, chang, wei = q.shape
    fenshu = q @ k.transpose(-2, -1) / math.sqrt(wei)  # 分数
    yunxu = sliding_window_mask(chang, window, q.device)  # 允许
    if attention_mask is not None:
        yunxu = yunxu & attention_mask[:, None, None, :].bool()  # 填充位置不看
    fenshu = fenshu.masked_fill(~yunxu, float("-inf"))
    return torch.softmax(fenshu, dim=-1) @ v
# bug-line: 14
