"""attnprep: a trainer for the hand-write-attention questions of LLM engineering interviews."""

__version__ = "0.1.0"
