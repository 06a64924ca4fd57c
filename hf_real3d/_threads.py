"""OpenMP busy-waiting, bounded, for this library's command-line entry points.

Torch's CPU kernels run on GNU OpenMP, whose idle threads spin (by default for up to ~300k
iterations) before sleeping. Beside another CPU job that spinning steals the cores the
other threads need. Measured on the 2-core machine, a reduced demo (12 training rooms):
alone 61-68 s; two side by side 626 s each and 600 s of CPU each (6x their quiet CPU time);
with ``GOMP_SPINCOUNT=1000`` alone 65 s, two side by side 114 s each at 108 s of CPU
(``OMP_WAIT_POLICY=PASSIVE``: 108 s side by side but 74-85 s alone; one thread: 97 s
alone). ``bound_openmp_spinning`` sets ``GOMP_SPINCOUNT=1000`` unless the user set it; it
must run before torch is first imported.
"""

from __future__ import annotations

import os

__all__ = ["bound_openmp_spinning"]

SPINCOUNT = "1000"


def bound_openmp_spinning() -> None:
    """Set ``GOMP_SPINCOUNT`` (unless set) before OpenMP starts; see the module doc."""
    os.environ.setdefault("GOMP_SPINCOUNT", SPINCOUNT)
