# attnprep: cross_entropy
# expect: passed
"""torchtune's CEWithChunkedOutputLoss idea: the tokens in chunks, each chunk's summed loss added
up, divided once by the number of tokens that count."""
from typing import List

import torch


class ChunkedCrossEntropy:
    def __init__(self, num_output_chunks: int = 4, ignore_index: int = -100, label_smoothing: float = 0.0):
        self.num_output_chunks = num_output_chunks
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def compute_cross_entropy(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        top = logits.max(dim=-1, keepdim=True).values
        log_z = top.squeeze(-1) + torch.log(torch.exp(logits - top).sum(dim=-1))
        mask = labels != self.ignore_index
        target_logit = logits.gather(-1, labels.masked_fill(~mask, 0).unsqueeze(-1)).squeeze(-1)
        nll = log_z - target_logit
        if self.label_smoothing:
            nll = (1 - self.label_smoothing) * nll + self.label_smoothing * (log_z - logits.mean(dim=-1))
        return (nll * mask).sum()

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        V = logits.size(-1)
        labels = labels.reshape(-1)
        total_elements = (labels != self.ignore_index).sum()
        logit_chunks: List[torch.Tensor] = list(logits.reshape(-1, V).chunk(self.num_output_chunks, dim=0))
        label_chunks: List[torch.Tensor] = list(labels.chunk(self.num_output_chunks, dim=0))
        total_loss = 0.0
        for logits_chunk, labels_chunk in zip(logit_chunks, label_chunks):
            total_loss += self.compute_cross_entropy(logits_chunk, labels_chunk)
        return total_loss / total_elements


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100,
                  label_smoothing: float = 0.0) -> torch.Tensor:
    return ChunkedCrossEntropy(3, ignore_index, label_smoothing)(logits, targets).to(logits.dtype)
