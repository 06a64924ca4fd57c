"""Shared helpers for benchmarks: each bench prints a table and one ``BENCH {json}`` line
per measurement, which ``bench/run_all.py`` gathers into a single table."""

from __future__ import annotations

import json
import resource


def peak_rss_mib() -> float:
    """Peak resident memory of this process and its finished children, MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def report(name: str, value: float, unit: str, *, baseline: float | None = None,
           target: str = "", ok: bool | None = None, **extra) -> None:
    """Print one measurement; ``ratio`` is value / baseline when a baseline was measured."""
    row = {"name": name, "value": round(value, 4), "unit": unit, "target": target,
           "ok": ok, **extra}
    if baseline:
        row["baseline"] = round(baseline, 4)
        row["ratio"] = round(value / baseline, 3)
    print("BENCH " + json.dumps(row))
