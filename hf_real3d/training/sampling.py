"""Batches that keep a question's viewpoints together, for the objectives that compare them
(``reweighting="viewpoint_dro"``).

:class:`ViewpointGroupSampler` shuffles whole groups (a question's rotated viewpoints share a
group id) and yields their rows one group after another, so that with a batch size that is a
multiple of the group size no group straddles two batches. Under ``accelerate`` each process
takes whole batches of its own, so the same holds with several processes.

>>> s = ViewpointGroupSampler([7, 7, 9, 9, 8, 8], batch_size=4, seed=0)
>>> order = list(s)
>>> sorted(order) == list(range(6)) and all(order[i] // 2 == order[i + 1] // 2
...                                          for i in range(0, 6, 2))
True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from hf_real3d.errors import InputError

__all__ = ["ViewpointGroupSampler", "WithGroupIds"]


class ViewpointGroupSampler(torch.utils.data.Sampler):
    """Row indices, group by group, in a seeded order that changes with :meth:`set_epoch`.

    The groups of two or more rows must all have the same size ``n`` (a question's
    viewpoints), and ``batch_size`` must be a multiple of ``n``; rows alone in their group (a
    question geometry could not turn) are bundled ``n`` at a time, so that every unit the
    sampler shuffles has ``n`` rows and no group straddles two batches. A ValueError names
    the fix otherwise, before any training."""

    def __init__(self, groups: Sequence[Any], batch_size: int, *, seed: int = 0,
                 shuffle: bool = True, column: str = "viewpoint_group"):
        order: dict[str, list[int]] = {}
        for i, g in enumerate(groups):
            order.setdefault(str(g), []).append(i)
        multi = [v for v in order.values() if len(v) > 1]
        if not multi:
            raise InputError(f"{column}: no question has two viewpoints (every id differs); "
                             "augment the training split with its turned viewpoints "
                             "(rotation_augment='all')")
        sizes = sorted({len(v) for v in multi})
        if len(sizes) > 1:
            small = min((g for g in order if len(order[g]) > 1), key=lambda g: len(order[g]))
            raise InputError(f"{column}: questions hold {sizes} viewpoints (e.g. {small!r} has "
                             f"{len(order[small])}); keep every viewpoint of a question, or drop "
                             "the incomplete ones")
        size = sizes[0]
        if batch_size % size:
            raise InputError(f"batch size {batch_size} is not a multiple of the {size} "
                             f"viewpoints per question; use per_device_train_batch_size "
                             f"{max(size, batch_size // size * size)} (or a multiple of {size})")
        alone = [v[0] for v in order.values() if len(v) == 1]
        self.units = multi + [alone[i:i + size] for i in range(0, len(alone), size)]
        self.size = size
        self.seed, self.shuffle, self.epoch = seed, shuffle, 0

    def set_epoch(self, epoch: int) -> None:
        """Another order of the groups for ``epoch`` (the Trainer calls it)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return sum(len(u) for u in self.units)

    def __iter__(self) -> Iterator[int]:
        full = [i for i, u in enumerate(self.units) if len(u) == self.size]
        short = [i for i, u in enumerate(self.units) if len(u) != self.size]
        if self.shuffle:
            rng = np.random.default_rng([self.seed, self.epoch])
            full = [full[i] for i in rng.permutation(len(full))]
        for i in [*full, *short]:  # a short bundle last: the units before it stay aligned
            yield from self.units[i]


class WithGroupIds:
    """Any data collator, with each batch's group ids added: the rows' ``column`` is taken
    out before ``collator`` sees them (it may not know the column) and packed as integer
    codes (B,) under the same name, which the viewpoint objective reads."""

    def __init__(self, collator: Any, column: str = "viewpoint_group"):
        self.collator, self.column = collator, column

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        missing = [i for i, r in enumerate(rows) if self.column not in r]
        if missing:
            raise InputError(f"batch row {missing[0]} has no {self.column!r} column (the id its "
                             "question's viewpoints share)")
        codes: dict[str, int] = {}
        ids = [codes.setdefault(str(r[self.column]), len(codes)) for r in rows]
        batch = self.collator([{k: v for k, v in r.items() if k != self.column} for r in rows])
        batch[self.column] = torch.tensor(ids)
        return batch
