"""The Real-ScanQA evaluation report: ``metrics.json`` and ``report.md``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d._io import atomic_dir, write_json
from hf_real3d.real_scanqa.format import CAPTION_METRICS
from hf_real3d.tables import markdown_table

__all__ = ["write_report"]


def write_report(out: str | os.PathLike, results: Sequence[dict[str, Any]],
                 sets: Mapping[str, pd.DataFrame], *, leo_compatible: bool = False,
                 captions: bool = True) -> None:
    """Write ``metrics.json`` (``results``) and ``report.md`` (a table per config of
    ``sets``) under ``out``, all at once."""
    cols = ["em", "em_refined", *(CAPTION_METRICS if captions else ())]
    md = ["# Real-ScanQA evaluation", "", "ScanQA has no agent pose: no rotation, no VRS. EM / "
          "refined EM as for Real-3DQA" + (" (official matching)" if leo_compatible else "")
          + ("; captioning metrics (x100) from pycocoevalcap." if captions else "."), ""]
    for config in sets:
        md += [f"## {config} ({len(sets[config])} questions)", "",
               markdown_table(["model", *cols],
                              [[r["model"], *(f"{r[config][c]:.1f}" for c in cols)]
                               for r in results]), ""]
    with atomic_dir(out) as tmp:
        write_json(Path(tmp) / "metrics.json", results, indent=2)
        (Path(tmp) / "report.md").write_text("\n".join(md), encoding="utf-8")
