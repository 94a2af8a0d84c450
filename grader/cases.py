"""The graded inputs: the same seeded tensors for the attempt and the reference.

Every input follows SPEC §1: right padding, at least one real token per sample, graded only at
real query positions. Some cases are perturbations of another one (future tokens, padded tokens,
a sample taken out of its batch): the attempt's outputs on them must equal its own outputs on the
base case at the positions that cannot see the change.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch

MAIN_T = 7  # the sequence length of the observed case; no head size in the configs may equal it
CAUSAL_CUT = 3  # tokens from here on are perturbed by the causality check


@dataclass
class Case:
    name: str
    inputs: dict[str, torch.Tensor]  # "x" for modules; "q", "k", "v" for functions
    attention_mask: torch.Tensor | None  # (B, T) bool, True = real token
    is_causal: bool
    graded: torch.Tensor  # (B, T) bool: query positions whose outputs are graded
    base: str | None = None  # perturbation of this case …
    unchanged: torch.Tensor | None = None  # … whose outputs must stay equal here ((B, T) bool)
    base_rows: tuple[int, int] | None = None  # compare with these samples of the base case
    check: str = ""  # which check the perturbation belongs to: causality, padding, batch, eval
    observe: bool = False  # record softmax / matmuls on this case (heat-map, shapes, row sums)
    picture: bool = False  # record the attention probabilities: a candidate for the heat-map


def _lengths_mask(lengths: list[int], T: int) -> torch.Tensor:
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)


def make_cases(shapes: dict[str, tuple[int, ...]], seed: int, config_index: int, dtype=torch.float32,
               left_padding: bool = False) -> list[Case]:
    """Cases for inputs of the given per-token shapes, e.g. {"x": (16,)} or {"q": (H, D), …}.

    ``shapes`` gives each input's shape without (B, T); functions take (B, H, T, D), which the
    driver gets by permuting; here everything is built as (B, T, *rest)."""
    g = torch.Generator().manual_seed(zlib.crc32(f"cases:{seed}:{config_index}".encode()))

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
    lengths = [T, 4, 1]
    pad_mask = _lengths_mask(lengths, T)
    future = torch.zeros(2, T, dtype=torch.bool)
    future[:, CAUSAL_CUT:] = True
    short = draw(1, 5)
    cases = [
        Case("plain", main, None, False, every(2, T)),
        Case("causal", main, None, True, every(2, T)),
        # The heat-map shows whichever of these two shows the attempt's error best: with right
        # padding a causal query never sees a padded key, so padding bugs show only without causal.
        Case("padded", padded, pad_mask, False, pad_mask, picture=True),
        Case("padded+causal", padded, pad_mask, True, pad_mask, observe=True, picture=True),
        Case("T=1", draw(1, 1), None, False, every(1, 1)),
        Case("T=1 causal+mask", draw(1, 1), torch.ones(1, 1, dtype=torch.bool), True, every(1, 1)),
        Case("B=1 T=5 causal", short, None, True, every(1, 5)),
        # perturbations
        Case("causal, future changed", replace(main, future), None, True, every(2, T),
             base="causal", unchanged=~future, check="causality"),
        Case("padded, padding changed", replace(padded, ~pad_mask), pad_mask, False, pad_mask,
             base="padded", unchanged=pad_mask, check="padding"),
        Case("padded+causal, padding changed", replace(padded, ~pad_mask), pad_mask, True, pad_mask,
             base="padded+causal", unchanged=pad_mask, check="padding"),
        Case("sample 2 alone", {k: v[1:2].clone() for k, v in padded.items()}, pad_mask[1:2].clone(), True,
             pad_mask[1:2].clone(), base="padded+causal", unchanged=pad_mask[1:2].clone(), base_rows=(1, 2),
             check="batch"),
        Case("plain again (new dropout seed)", main, None, False, every(2, T), base="plain",
             unchanged=every(2, T), check="eval"),
    ]
    if left_padding:
        left = torch.arange(T)[None, :] >= torch.tensor([0, 3, 6])[:, None]  # (B, T) pads first
        lpadded = draw(3, T)
        cases += [
            Case("left-padded+causal", lpadded, left, True, left),
            Case("left-padded+causal, padding changed", replace(lpadded, ~left), left, True, left,
                 base="left-padded+causal", unchanged=left, check="padding"),
        ]
    return cases
