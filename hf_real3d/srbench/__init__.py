"""3DSRBench: the official TSV format, dataset folders, and CircularEval / FlipEval scoring.

* :mod:`.format` reads and writes VLMEvalKit TSV rows, groups qids, expands questions;
* :mod:`.build` writes dataset folders (official rows and/or synthetic renders);
* :mod:`.evaluate` scores answers and computes the baselines.
"""

from hf_real3d.srbench.build import CITATION, build_srbench, expand, load_rows
from hf_real3d.srbench.evaluate import baselines, model_predictions, prompt_for, score_rows
from hf_real3d.srbench.format import (
    CATEGORIES,
    GROUPS,
    TSV_COLUMNS,
    circular_expand,
    complementary,
    flip_expand,
    parse_qid,
    read_tsv,
    rows_to_dataset,
    write_tsv,
)

__all__ = [
    "CATEGORIES",
    "CITATION",
    "GROUPS",
    "TSV_COLUMNS",
    "baselines",
    "build_srbench",
    "circular_expand",
    "complementary",
    "expand",
    "flip_expand",
    "load_rows",
    "model_predictions",
    "parse_qid",
    "prompt_for",
    "read_tsv",
    "rows_to_dataset",
    "score_rows",
    "write_tsv",
]
