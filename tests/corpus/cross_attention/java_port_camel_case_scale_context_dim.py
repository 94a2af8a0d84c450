# attnprep: cross_attention
# expect: wrong_output
# diagnosis: cross_scale_d_context
"""A Java / C# developer's port: camelCase fields and getters (getHeadDim(), getScale()), one method
per step, explicit `this`-like self.mField names, no shape comments."""
import math

import torch
import torch.nn as nn


class CrossAttention(nn.Module):
    def __init__(self, d_model, num_heads, d_context=None, dropout=0.0):
        super().__init__()
        self.mModelDim = d_model
        self.mNumHeads = num_heads
        self.mContextDim = d_model if d_context is None else d_context
        self.q_proj = nn.Linear(self.mModelDim, self.mModelDim)
        self.k_proj = nn.Linear(self.mContextDim, self.mModelDim)
        self.v_proj = nn.Linear(self.mContextDim, self.mModelDim)
        self.o_proj = nn.Linear(self.mModelDim, self.mModelDim)
        self.mDropout = nn.Dropout(dropout)

    def getHeadDim(self):
        return self.mModelDim // self.mNumHeads

    def getScale(self):
        return 1.0 / math.sqrt(self.mContextDim // self.mNumHeads)

    def splitHeads(self, tensor):
        batchSize, seqLen, _ = tensor.shape
        return tensor.view(batchSize, seqLen, self.mNumHeads, self.getHeadDim()).transpose(1, 2)

    def mergeHeads(self, tensor):
        batchSize, _, seqLen, _ = tensor.shape
        return tensor.transpose(1, 2).contiguous().view(batchSize, seqLen, self.mModelDim)

    def computeScores(self, queryHeads, keyHeads):
        return torch.matmul(queryHeads, keyHeads.transpose(-2, -1)) * self.getScale()

    def applyContextMask(self, scores, contextMask):
        if contextMask is None:
            return scores
        return scores.masked_fill(contextMask.logical_not().unsqueeze(1).unsqueeze(2), float("-inf"))

    def forward(self, x, context, context_mask=None):
        queryHeads = self.splitHeads(self.q_proj(x))
        keyHeads = self.splitHeads(self.k_proj(context))
        valueHeads = self.splitHeads(self.v_proj(context))
        scores = self.applyContextMask(self.computeScores(queryHeads, keyHeads), context_mask)
        weights = self.mDropout(torch.softmax(scores, dim=-1))
        return self.o_proj(self.mergeHeads(torch.matmul(weights, valueHeads)))
# bug-line: 28
