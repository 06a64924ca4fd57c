"""OpenMP busy-waiting, bounded: importing hf_real3d sets it, before torch loads.

Torch's CPU kernels run on GNU OpenMP, whose idle threads spin for a long while before
sleeping. Beside another CPU job that spinning steals the cores the other threads need, and
two trainings side by side each run several times slower than alone. A short spin bounds
that cost while leaving a training alone about as fast as before.
``bound_openmp_spinning`` sets ``GOMP_SPINCOUNT=1000`` unless the user set it; it must run
before torch is first imported.
"""

from __future__ import annotations

import os

__all__ = ["bound_openmp_spinning"]

SPINCOUNT = "1000"


def bound_openmp_spinning() -> None:
    """Set ``GOMP_SPINCOUNT`` (unless set) before OpenMP starts; see the module doc."""
    os.environ.setdefault("GOMP_SPINCOUNT", SPINCOUNT)
