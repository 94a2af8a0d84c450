# attnprep: kv_cache
# expect: wrong_output
# diagnosis: cache_kv_swapped + scale_by_dim
"""Komentar bahasa Indonesia (Indonesian comments and names: kunci, nilai, lalu for the past), the
cache unpacked as (nilai, kunci) where it is returned as (kunci, nilai), and the scores divided by
head_dim instead of its square root."""
import torch
import torch.nn as nn


class KVCacheAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads):
        super().__init__()
        self.jumlah_kepala = num_heads  # kepala query
        self.jumlah_kv = num_kv_heads  # kepala kunci/nilai
        self.dim_kepala = d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, num_kv_heads * self.dim_kepala)
        self.v_proj = nn.Linear(d_model, num_kv_heads * self.dim_kepala)
        self.o_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.shape
        H, G, D = self.jumlah_kepala, self.jumlah_kv, self.dim_kepala
        kueri = self.q_proj(x).view(B, T, H, D).permute(0, 2, 1, 3)
        kunci = self.k_proj(x).view(B, T, G, D).permute(0, 2, 1, 3)
        nilai = self.v_proj(x).view(B, T, G, D).permute(0, 2, 1, 3)
        if cache is not None:
            nilai_lalu, kunci_lalu = cache  # isi cache dari langkah sebelumnya
            kunci = torch.cat((kunci_lalu, kunci), dim=2)
            nilai = torch.cat((nilai_lalu, nilai), dim=2)
        cache_baru = (kunci, nilai)
        S = kunci.shape[2]
        kunci = kunci.repeat_interleave(H // G, dim=1)
        nilai = nilai.repeat_interleave(H // G, dim=1)
        skor = kueri @ kunci.transpose(-1, -2) / D
        boleh = torch.ones(T, S, dtype=torch.bool, device=x.device).tril(S - T)  # token baru t di posisi S - T + t
        skor = skor.masked_fill(~boleh, float("-inf"))
        bobot = torch.softmax(skor, dim=-1)
        keluaran = (bobot @ nilai).permute(0, 2, 1, 3).reshape(B, T, C)
        return self.o_proj(keluaran), cache_baru
# bug-line: 29, 36
