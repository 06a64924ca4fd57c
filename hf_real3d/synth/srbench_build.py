"""The synthetic 3DSRBench as a dataset folder, and the text-only prior's rows.

Kept apart from :mod:`hf_real3d.synth.srbench_gen` so that the render worker processes,
which import that module, do not load ``datasets`` and the Hub client (measured: twice the
start-up time of every per-scene process).
"""

from __future__ import annotations

import os

from hf_real3d.srbench.build import SRBenchBuildRun, build_srbench
from hf_real3d.srbench.format import read_tsv
from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench

__all__ = ["build_srbench_folder"]


def build_srbench_folder(out: str | os.PathLike, cfg: SRBenchConfig, *, tsv: str | None = None,
                         workers: int = 2, export_tsv: bool = False,
                         push_to_hub: str | None = None,
                         license: str = "cc-by-4.0") -> SRBenchBuildRun:
    """``hf-real3d build-3dsrbench``: render ``cfg.scenes`` synthetic scenes (none when 0)
    and write them, with the official ``tsv`` rows if given, as a dataset folder."""
    real = read_tsv(tsv) if tsv else None  # a bad TSV fails before minutes of rendering
    synthetic = generate_srbench(cfg, workers=workers) if cfg.scenes > 0 else None
    return build_srbench(out, tsv=real, synthetic=synthetic, export_tsv=export_tsv,
                         push_to_hub=push_to_hub, license=license)
