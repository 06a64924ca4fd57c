"""What this package's ``evaluate`` modules share: ``compute`` without the Arrow round trip.

``evaluate``'s ``compute(predictions=..., references=...)`` writes every input row to an
Arrow cache file and reads it back before calling ``_compute``; on a million rows that round
trip costs several times the scoring itself. :class:`InMemoryCompute` calls ``_compute`` on
the given inputs directly when nothing needs the cache: one process (``num_process == 1``),
no rows added earlier with ``add_batch``, every input given. Everything else (``add_batch``
then ``compute()``, distributed evaluation) takes ``evaluate``'s own path, and both paths
return the same values (tested).
"""

from __future__ import annotations

from typing import Any

from datasets.utils.py_utils import temp_seed  # the seed context evaluate's compute uses

__all__ = ["InMemoryCompute"]


class InMemoryCompute:
    """Mixin placed before ``evaluate.Metric`` in a module's bases."""

    def compute(self, *, predictions: Any = None, references: Any = None,
                **kwargs: Any) -> dict | None:
        """Compute the metric (keyword arguments only); the inputs are described below.
        """
        names = list(self._feature_names())
        given = {"predictions": predictions, "references": references, **kwargs}
        direct = (getattr(self, "num_process", 1) == 1 and self.writer is None
                  and self.buf_writer is None
                  and all(given.get(n) is not None for n in names))
        if not direct:
            return super().compute(predictions=predictions, references=references, **kwargs)
        inputs = {n: given[n] for n in names}
        lengths = {n: len(v) for n, v in inputs.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError("Mismatch in the number of rows: "
                             + ", ".join(f"{n}={k}" for n, k in lengths.items()))
        compute_kwargs = {k: v for k, v in kwargs.items() if k not in names}
        with temp_seed(self.seed):
            return self._compute(**inputs, **compute_kwargs)
