# attnprep: mha
# expect: wrong_output
# diagnosis: split_heads_no_transpose + dropout_in_eval
"""הערות בעברית (Hebrew comments), short Hebrew-transliterated names (rosh for a head, mafteach for
the keys, erech for the values), the dropout called as F.dropout(w, self.p) whose training flag
defaults to True, and the heads reshaped (B, H, T, D) straight from (B, T, C)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.rosh = num_heads  # מספר הראשים
        self.godel = d_model // num_heads  # גודל כל ראש
        self.p = dropout
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, attention_mask=None, is_causal=False):
        B, T, C = x.shape
        sheela = self.q_proj(x).reshape(B, self.rosh, T, self.godel)  # שאילתות
        mafteach = self.k_proj(x).reshape(B, self.rosh, T, self.godel)  # מפתחות
        erech = self.v_proj(x).reshape(B, self.rosh, T, self.godel)  # ערכים
        tziun = sheela @ mafteach.transpose(-2, -1) / math.sqrt(self.godel)  # ציונים
        if attention_mask is not None:  # ריפוד: מפתחות שאינם אמיתיים
            tziun = tziun.masked_fill(~attention_mask[:, None, None, :], float("-inf"))
        if is_causal:  # רק העבר
            atid = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            tziun = tziun.masked_fill(atid, float("-inf"))
        mishkal = F.dropout(F.softmax(tziun, dim=-1), self.p)
        yetzia = (mishkal @ erech).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(yetzia)
# bug-line: 27, 28, 29, 36
