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

__all__ = ["ViewpointGroupSampler"]


class ViewpointGroupSampler(torch.utils.data.Sampler):
    """Row indices, group by group, the groups in a seeded order that changes with
    :meth:`set_epoch`. Every group must have the same size, and ``batch_size`` must be a
    multiple of it: a ValueError names the fix otherwise."""

    def __init__(self, groups: Sequence[Any], batch_size: int, *, seed: int = 0,
                 shuffle: bool = True, column: str = "viewpoint_group"):
        keys = np.asarray([str(g) for g in groups], dtype=object)
        order: dict[str, list[int]] = {}
        for i, g in enumerate(keys):
            order.setdefault(g, []).append(i)
        sizes = {len(v) for v in order.values()}
        if len(sizes) > 1:
            small = min(order, key=lambda g: len(order[g]))
            raise ValueError(f"{column}: questions hold {sorted(sizes)} viewpoints (e.g. "
                             f"{small!r} has {len(order[small])}); keep every viewpoint of a "
                             "question, or drop the incomplete ones")
        size = sizes.pop() if sizes else 1
        if batch_size % size:
            raise ValueError(f"batch size {batch_size} is not a multiple of the {size} "
                             f"viewpoints per question; use per_device_train_batch_size "
                             f"{max(size, batch_size // size * size)} (or a multiple of {size})")
        self.groups = list(order.values())
        self.seed, self.shuffle, self.epoch = seed, shuffle, 0

    def set_epoch(self, epoch: int) -> None:
        """Another order of the groups for ``epoch`` (the Trainer calls it)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return sum(len(g) for g in self.groups)

    def __iter__(self) -> Iterator[int]:
        idx = np.arange(len(self.groups))
        if self.shuffle:
            idx = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.groups))
        for i in idx:
            yield from self.groups[i]
