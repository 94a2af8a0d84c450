"""The graded inputs: the same seeded tensors for the attempt and the reference.

A :class:`Case` is one call (or one script of calls) with its inputs, which outputs are graded
where, and, for a perturbation of another case, where its outputs must stay equal to that case's.
Kinds build their cases; :func:`sequence_cases` is the set every token-sequence kind shares:
right padding and left padding (the two ways real batches are padded), at least one real token per
sample, graded only at real query positions, and the perturbations of the generic probes (future
tokens, padded tokens, a sample taken out of its batch, a second run in eval()).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

MAIN_T = 7  # the sequence length of the observed case; no head size in the configs may equal it
CAUSAL_CUT = 3  # tokens from here on are perturbed by the causality check


@dataclass
class Case:
    name: str
    inputs: dict[str, Any]  # what the kind passes to the attempt: tensors, flags ("is_causal")
    queries: torch.Tensor  # (B, T_q) bool: real query positions (graded rows; heat-map, row sums)
    seq: tuple[int, int]  # (T_q, T_k): the size of the score matrices, for the observer
    graded: dict[str, torch.Tensor] = field(default_factory=dict)  # output -> bool mask broadcastable to it
    base: str | None = None  # a perturbation of this case …
    unchanged: dict[str, torch.Tensor] | None = None  # … whose outputs must stay equal here
    base_rows: tuple[int, int] | None = None  # compare with these samples of the base case
    check: str = ""  # which probe the perturbation belongs to: causality, padding, batch, eval
    observe: bool = False  # record softmax / matmuls on this case (heat-map, shapes, row sums)
    picture: bool = False  # record the attention probabilities: a candidate for the heat-map
    grads: bool = False  # the case run once more with gradients on (no fully masked row: no NaN)
    dtype: str = "float32"  # the dtype every output must have (the input's: bfloat16 for a bfloat16 case)
    tolerance: tuple[float, float] | None = None  # (rtol, atol) for this case; None: the grader's float32 one

    def mask(self, output: str, shape: tuple[int, ...]) -> torch.Tensor:
        """Where ``output`` is graded, expanded to its shape (everywhere when not said)."""
        where = self.graded.get(output)
        if where is None:
            return torch.ones(shape, dtype=torch.bool)
        return where.expand(shape)

    def unchanged_mask(self, output: str, shape: tuple[int, ...]) -> torch.Tensor:
        where = (self.unchanged or {}).get(output)
        if where is None:
            return torch.ones(shape, dtype=torch.bool)
        return where.expand(shape)


def generator(seed: int, config_index: int, salt: str = "cases") -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(f"{salt}:{seed}:{config_index}".encode()))


def rows(positions: torch.Tensor, token_axis: int, ndim: int) -> torch.Tensor:
    """A (B, T) bool of positions as a mask broadcastable to an output of ``ndim`` dims whose batch
    axis is 0 and token axis ``token_axis``."""
    view = [1] * ndim
    view[0], view[token_axis] = positions.shape
    return positions.reshape(view)


def lengths_mask(lengths: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T) right padding


def left_mask(starts: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] >= torch.tensor(starts)[:, None]  # (B, T) padding first


@dataclass
class SequenceCase:
    """What :func:`sequence_cases` describes before a kind turns it into a :class:`Case`."""

    name: str
    tensors: dict[str, torch.Tensor]  # each (B, T, *per-token shape)
    mask: torch.Tensor | None  # (B, T) bool key padding mask, True = real
    is_causal: bool
    queries: torch.Tensor  # (B, T) bool
    base: str | None = None
    unchanged: torch.Tensor | None = None  # (B, T) bool
    base_rows: tuple[int, int] | None = None
    check: str = ""
    observe: bool = False
    picture: bool = False
    grads: bool = False


def sequence_cases(shapes: dict[str, tuple[int, ...]], seed: int, config_index: int,
                   dtype=torch.float32) -> list[SequenceCase]:
    """The token-sequence cases for inputs of the given per-token shapes, e.g. {"x": (16,)}."""
    g = generator(seed, config_index)

    def draw(B: int, T: int) -> dict[str, torch.Tensor]:
        return {k: torch.randn((B, T, *s), generator=g).to(dtype) for k, s in shapes.items()}

    def replace(base: dict[str, torch.Tensor], where: torch.Tensor) -> dict[str, torch.Tensor]:
        fresh = draw(*where.shape)
        out = {}
        for k, t in base.items():
            w = where.reshape(*where.shape, *([1] * (t.dim() - 2)))
            out[k] = torch.where(w, fresh[k], t)
        return out

    T = MAIN_T
    every = lambda B, T: torch.ones(B, T, dtype=torch.bool)  # noqa: E731
    main = draw(2, T)
    padded = draw(3, T)
    pad_mask = lengths_mask([T, 4, 1], T)
    future = torch.zeros(2, T, dtype=torch.bool)
    future[:, CAUSAL_CUT:] = True
    short = draw(1, 5)
    left = left_mask([0, 3, 6], T)
    lpadded = draw(3, T)
    S = SequenceCase
    return [
        S("plain", main, None, False, every(2, T)),
        S("plain+causal", main, None, True, every(2, T), grads=True),
        # The heat-map shows whichever of these shows the attempt's error best: with right padding a
        # causal query never sees a padded key, so padding bugs show only without causal or with
        # left padding.
        S("padded", padded, pad_mask, False, pad_mask, picture=True),
        S("padded+causal", padded, pad_mask, True, pad_mask, observe=True, picture=True),
        S("left-padded", lpadded, left, False, left),
        S("left-padded+causal", lpadded, left, True, left),
        S("T=1", draw(1, 1), None, False, every(1, 1)),
        S("T=1 causal+mask", draw(1, 1), torch.ones(1, 1, dtype=torch.bool), True, every(1, 1)),
        S("B=1 T=5 causal", short, None, True, every(1, 5)),
        # perturbations
        S("plain+causal, future changed", replace(main, future), None, True, every(2, T),
          base="plain+causal", unchanged=~future, check="causality"),
        S("padded, padding changed", replace(padded, ~pad_mask), pad_mask, False, pad_mask,
          base="padded", unchanged=pad_mask, check="padding"),
        S("padded+causal, padding changed", replace(padded, ~pad_mask), pad_mask, True, pad_mask,
          base="padded+causal", unchanged=pad_mask, check="padding"),
        S("left-padded, padding changed", replace(lpadded, ~left), left, False, left,
          base="left-padded", unchanged=left, check="padding"),
        S("left-padded+causal, padding changed", replace(lpadded, ~left), left, True, left,
          base="left-padded+causal", unchanged=left, check="padding"),
        S("sample 2 alone", {k: v[1:2].clone() for k, v in padded.items()}, pad_mask[1:2].clone(), True,
          pad_mask[1:2].clone(), base="padded+causal", unchanged=pad_mask[1:2].clone(), base_rows=(1, 2),
          check="batch"),
        S("plain again (new dropout seed)", main, None, False, every(2, T), base="plain",
          unchanged=every(2, T), check="eval"),
    ]


def to_case(s: SequenceCase, inputs: dict[str, Any], output_masks: Callable[[torch.Tensor], dict[str, torch.Tensor]]) -> Case:
    """A :class:`Case` of a kind from a :class:`SequenceCase`: ``output_masks`` turns (B, T) query
    positions into the kind's per-output masks."""
    T = s.queries.shape[1]
    return Case(
        name=s.name, inputs=inputs, queries=s.queries, seq=(T, T), graded=output_masks(s.queries),
        base=s.base, unchanged=None if s.unchanged is None else output_masks(s.unchanged),
        base_rows=s.base_rows, check=s.check, observe=s.observe, picture=s.picture, grads=s.grads,
    )


def grads_case(cases: list[Case]) -> Case:
    """The case a kind runs with gradients on: the one marked ``grads``, else the observed one."""
    return next((c for c in cases if c.grads), None) or next(c for c in cases if c.observe)
