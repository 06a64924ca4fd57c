"""3DSRBench: the official TSV format, dataset folders, and CircularEval / FlipEval scoring.

* :mod:`.format` reads and writes VLMEvalKit TSV rows, groups qids, expands questions;
* :mod:`.build` writes dataset folders (official rows and/or synthetic renders);
* :mod:`.predictions` reads answers (JSONL, VLMEvalKit tables, lmms-eval samples);
* :mod:`.rules` reads answers as each of the field's scorers does;
* :mod:`.evaluate` scores answers and computes the baselines;
* :mod:`.report` writes the report.
"""

from hf_real3d._lazy import lazy_exports
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

__all__ = ["CATEGORIES", "CITATION", "GROUPS", "TSV_COLUMNS", "baselines", "build_srbench",
           "circular_expand", "complementary", "expand", "flip_expand", "load_rows",
           "model_predictions", "parse_qid", "prompt_for", "read_tsv", "rows_to_dataset",
           "score_rows", "write_tsv", "evaluate_dataset"]

_LAZY = {
    'CITATION': 'hf_real3d.srbench.build',
    'build_srbench': 'hf_real3d.srbench.build',
    'expand': 'hf_real3d.srbench.build',
    'load_rows': 'hf_real3d.srbench.build',
    'baselines': 'hf_real3d.srbench.evaluate',
    'model_predictions': 'hf_real3d.srbench.evaluate',
    'prompt_for': 'hf_real3d.srbench.evaluate',
    'score_rows': 'hf_real3d.srbench.evaluate',
    'evaluate_dataset': 'hf_real3d.srbench.evaluate',
}

# build and evaluate load datasets, the Hub client and matplotlib: only on use, so
# that importing the format (as the render workers do) stays light
__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
