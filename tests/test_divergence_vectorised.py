"""The divergence matcher's vectorised searches answer exactly as the one-at-a-time comparisons they
replaced (an attempt that loops over rows asks them of thousands of slices: 12 s of a grade was
spent there on one corpus attempt)."""

from __future__ import annotations

import random

import torch

from attnprep.grader.divergence import Matcher, _close_to_a_run, _near_all, _near_rows, _probes, _sorted_values
from attnprep.grader.found import close as _close


def _runs_one_at_a_time(t, r, eps):
    w = t.shape[-1]
    return any(_close(t, r[..., o:o + w], eps) for o in range(0, r.shape[-1] - w + 1, w))


def _slices_one_at_a_time(r, n):
    parts = []
    views = [r] + [r.flatten(a, a + 1) for a in range(r.dim() - 1)]
    if n == 1 and r.dim() > 2:
        views.append(r.flatten())  # one number: any one entry
    for v in views:
        for axis, size in enumerate(v.shape):
            rest = v.numel() // size
            if n % rest or not 0 < n // rest < size or size % (n // rest):
                continue
            run = n // rest
            for start in range(0, size, run):
                part = v.narrow(axis, start, run)
                values = _sorted_values(part)
                parts.append((part.squeeze(axis) if run == 1 else part, values, _probes(values)))
    return parts


def test_a_run_of_the_last_dim_is_found_as_one_at_a_time():
    rng = random.Random(0)
    torch.manual_seed(0)
    found = 0
    for _ in range(1500):
        shape = [rng.randint(1, 3) for _ in range(rng.randint(1, 3))]
        w, k = rng.randint(1, 4), rng.randint(1, 4)
        r = torch.randn(*shape, k * w + (rng.randint(0, w - 1) if w > 1 else 0), dtype=torch.float64)
        r = r * rng.choice([1e-4, 1e-2, 1.0, 10.0])
        o = rng.randrange(k) * w
        t = r[..., o:o + w].clone()
        how = rng.randint(0, 5)
        corner = (0,) * t.dim()
        if how == 1:
            t = t + torch.randn_like(t) * rng.choice([1e-7, 1e-5, 1e-3])
        elif how == 2:
            t[corner] = float("nan")
            r[(0,) * (r.dim() - 1) + (o,)] = rng.choice([float("nan"), 1.0])
        elif how == 3:
            t[corner] = float("-inf")
            r[(0,) * (r.dim() - 1) + (o,)] = rng.choice([float("-inf"), float("inf")])
        elif how == 4:
            r[...] = float("-inf")
            t[...] = float("-inf")
        elif how == 5:
            t = torch.randn_like(t)
        eps = rng.choice([0.0, 1e-3])
        want = _runs_one_at_a_time(t, r, eps)
        assert _close_to_a_run(t, r, eps) == want
        found += want
    assert 0 < found < 1500  # both answers were asked


def test_slices_and_their_probes_are_cut_as_one_at_a_time():
    rng = random.Random(1)
    torch.manual_seed(1)
    compared = 0
    for _ in range(200):
        r = torch.randn(*[rng.randint(1, 4) for _ in range(rng.randint(1, 4))], dtype=torch.float64)
        if rng.random() < 0.3:
            r.view(-1)[0] = float("nan")
        if rng.random() < 0.3:
            r.view(-1)[-1] = float("-inf")
        matcher = Matcher([])
        matcher.ref = [(None, r)]
        for n in range(1, r.numel()):
            old = _slices_one_at_a_time(r, n)
            parts, table = matcher._slices_of(0, n)
            assert len(parts) == len(old) == table.shape[0]
            for (part, values, probes), (new_part, new_values), row in zip(old, parts, table):
                assert part.shape == new_part.shape and torch.equal(part.nan_to_num(), new_part.nan_to_num())
                assert torch.equal(values, new_values) and tuple(row.tolist()) == probes
                compared += 1
            asked = old[0][2] if old and rng.random() < 0.5 else _probes(_sorted_values(torch.randn(n, dtype=torch.float64)))
            for eps in (0.0, 1e-3):
                assert _near_rows(asked, table, eps) == [j for j, (_, _, p) in enumerate(old) if _near_all(asked, p, eps)]
    assert compared > 1000
