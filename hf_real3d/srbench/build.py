"""3DSRBench as a dataset folder: official TSV rows and/or synthetic renders, expanded
with FlipEval copies and CircularEval shifts."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d.hub import ConfigData, load_local, push_folder, write_dataset_folder
from hf_real3d.srbench.format import (
    circular_expand,
    complementary,
    flip_expand,
    read_tsv,
    rows_to_dataset,
    write_tsv,
)

__all__ = ["CITATION", "SRBenchBuildRun", "expand", "build_srbench", "load_rows"]

CITATION = """@article{ma20243dsrbench,
  title={3DSRBench: A Comprehensive 3D Spatial Reasoning Benchmark},
  author={Ma, Wufei and others},
  journal={arXiv preprint arXiv:2412.07825},
  year={2024}
}"""


def expand(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """FlipEval copies of every question, then every circular shift of both, each row with
    its own ``index`` (its position): VLMEvalKit writes a row's image to ``{index}.jpg`` and
    reuses a file that exists, so a shared index would show a mirrored row its original's
    image."""
    return [dict(r, index=i) for i, r in enumerate(circular_expand(flip_expand(rows)))]


@dataclass
class SRBenchBuildRun:
    """``hf-real3d build-3dsrbench``: the rows of each config written."""

    counts: dict[str, int]
    url: str | None = None  # where it was published
    stats: dict[str, Any] = field(default_factory=dict)  # the synthetic generator's

    def lines(self, out: str) -> list[str]:
        return [f"wrote {out}: {self.counts}"]


def build_srbench(out: str | os.PathLike, *, tsv: str | list | None = None, synthetic=None,
                  export_tsv: bool = False, push_to_hub: str | None = None,
                  license: str = "cc-by-4.0", complementary_questions: bool = True
                  ) -> SRBenchBuildRun:
    """Folder with configs ``real`` (from an official TSV), ``synthetic_common`` and
    ``synthetic_uncommon`` (from the synthetic generator's output, expanded). ``license``:
    the card's license (3DSRBench's is CC BY 4.0; set yours for your own rows).
    ``complementary_questions``: add the complementary comparatives to the synthetic
    splits before expanding them, as the paper does (2,100 -> 2,625 questions). ``tsv``: the
    official TSV's path, or its rows as :func:`read_tsv` returns them."""
    configs, counts = [], {}
    if tsv:
        real = read_tsv(tsv) if isinstance(tsv, str | os.PathLike) else list(tsv)
        data, feats = rows_to_dataset(real)
        configs.append(ConfigData("real", {"test": data}, feats, "official 3DSRBench rows",
                                  default=True, rows_per_shard=2000))
        counts["real"] = len(real)
    expanded = {}
    if synthetic:
        for name in ("synthetic_common", "synthetic_uncommon"):
            rows = list(synthetic[name])
            if complementary_questions:
                rows += complementary(rows)
            expanded[name] = expand(rows)
            data, feats = rows_to_dataset(expanded[name])
            configs.append(ConfigData(name, {"test": data}, feats,
                                      f"renders from {name.split('_')[1]} viewpoints, expanded "
                                      "with circular shifts and flips", default=not configs,
                                      rows_per_shard=2000))
            counts[name] = len(expanded[name])
    if not configs:
        raise ValueError("Expected an official TSV, synthetic rows, or both")
    stats = synthetic.get("stats", {}) if synthetic else {}
    section = ("## Columns\n\n`options` (A..D), `answer` (letter), `category` (12) and `group` "
               "(4), `circular_group` (rows that are circular shifts of one question), "
               "`flip_group` (original and flipped, all shifts), `shift`, `flipped`, "
               "`pair_id` (the same question in synthetic_common and synthetic_uncommon), "
               "`camera` (JSON: pose and measured roll/pitch/height).\n\n"
               f"Synthetic generation: {json.dumps(stats)}")
    write_dataset_folder(out, configs, pretty_name="3DSRBench (hf_real3d)",
                         summary="3D spatial reasoning VQA: height, location, orientation and "
                                 "multi-object questions, scored with CircularEval and FlipEval.",
                         license=license, citation=CITATION, extra_sections=[section],
                         tags=("3d", "visual-question-answering", "spatial-reasoning"))
    if export_tsv:
        for name, rows in expanded.items():
            write_tsv(rows, Path(out) / "tsv" / f"{name}.tsv")
    return SRBenchBuildRun(counts, push_folder(out, push_to_hub) if push_to_hub else None,
                           stats)


def load_rows(folder: str | os.PathLike, config: str) -> list[dict[str, Any]]:
    """Rows of one config of a built folder (images as PIL)."""
    return list(load_local(folder, config))
