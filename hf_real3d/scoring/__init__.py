"""Pure, vectorised metric functions, one module per family; every name means one thing.

* :mod:`~hf_real3d.scoring.exact_match`: EM and refined EM over answer strings;
* :mod:`~hf_real3d.scoring.vrs`: P_k, the Viewpoint Rotation Score and its baseline;
* :mod:`~hf_real3d.scoring.groups`: all-correct groups, CircularEval, FlipEval, chance;
* :mod:`~hf_real3d.scoring.intervals`: bootstrap intervals;
* :mod:`~hf_real3d.scoring.arrays`: the array helpers and :class:`MetricInputError`.

All functions take arrays or lists and return plain dicts of floats (percentages, 0-100).
Group keys are always explicit inputs (``group_ids``), never arithmetic on indices.
"""

from hf_real3d.scoring.arrays import MetricInputError, factorize, first_rows
from hf_real3d.scoring.exact_match import (
    answer_correctness,
    degenerate_counts,
    degenerate_predictions,
    em_scores,
)
from hf_real3d.scoring.groups import (
    chance_accuracy,
    check_circular_groups,
    check_flip_groups,
    circular_eval,
    flip_circular_eval,
    flip_eval,
    group_all_correct,
)
from hf_real3d.scoring.intervals import bootstrap_ci
from hf_real3d.scoring.vrs import (
    ViewpointGroups,
    expected_p_at_least,
    viewpoint_groups,
    vrs,
    vrs_from_counts,
)

__all__ = ["MetricInputError", "answer_correctness", "em_scores", "degenerate_predictions",
           "degenerate_counts", "ViewpointGroups", "viewpoint_groups", "vrs_from_counts",
           "expected_p_at_least", "vrs", "group_all_correct", "check_circular_groups",
           "check_flip_groups", "circular_eval", "flip_eval", "flip_circular_eval",
           "chance_accuracy", "bootstrap_ci", "factorize", "first_rows"]
