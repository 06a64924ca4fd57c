"""Viewpoint Rotation Score (VRS) with EM and refined EM, as an evaluate metric."""

import datasets
import evaluate
import numpy

import hf_real3d.scoring
from hf_real3d.metric_base import InMemoryCompute

_DESCRIPTION = """
Scores situated 3D question answering the way Real-3DQA does. Each question is asked from
several viewpoints (the agent turned by 0/90/180/270 degrees, situation text and answer
updated). P_k is the percentage of question groups answered correctly in at least k
viewpoints; VRS is the mean of P_1..P_n. A model that guesses from language alone can
reach a high P_1 but collapses on P_n.

Correctness is refined exact match by default (normalised prediction equal to, or
containing / contained in, a reference with spaces removed), as in the paper's Table 3;
pass `correctness="exact"` for plain EM. Overall EM and refined EM are reported too.
Config `per_type` adds the input `question_types` and per-type EM / refined EM.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's answer, one per row.
    references (`list` of `list` of `str`, or `list` of `str`): acceptable answers per row.
    group_ids (`list` of `int` or `str`): the base question id shared by a group's rows.
    rotations (`list` of `int`): the row's viewpoint in degrees (agent turned clockwise).
    question_types (`list` of `str`, config `per_type` only): a category per row.
    correctness (`str`, default `"refined"`): `"refined"` or `"exact"` decides P_k.
    leo_compatible (`bool`, default `False`): reproduce the published LEO/Real-3DQA
        matching exactly (empty prediction refined-correct; first substring hit decides).
    incomplete (`str`, default `"error"`): a group lacking viewpoints raises, or with
        `"drop"` is left out and counted in `incomplete_groups`.
    viewpoints (`list` of `int`, optional): the expected viewpoints (default: all seen).
    ci (`bool`, default `False`): add 95% bootstrap intervals over groups (`vrs_ci`).
Returns:
    em, em_refined (`float`, 0-100, or None without 0-degree rows): over the rows at
        rotation 0 (the original view), as `hf-real3d evaluate` computes them.
    em_all_rows, em_refined_all_rows (`float`, 0-100): over every row, all viewpoints.
    p_at_least_1 .. p_at_least_n (`float`, 0-100): P_k over complete groups.
    vrs (`float`, 0-100): mean of P_k, which equals `accuracy` (the accuracy over the
        rows of complete groups, since sum_k 1[c >= k] = c).
    accuracy_per_viewpoint (`dict`): accuracy (0-100) per viewpoint.
    expected_p_at_least_1 .. n (`float`, 0-100): P_k if the viewpoints were answered
        independently at those accuracies.
    consistency (`float` or None): P_n / expected P_n (1: independent viewpoints).
    vrs_ci, consistency_ci, p_at_least_ci: 95% bootstrap intervals (with `ci=True`).
    groups, incomplete_groups (`int`); viewpoints (`list`).
    per_type (`dict`, config `per_type`): em / em_refined / n per question type (0-degree
        rows).
Examples:
    >>> import hf_real3d
    >>> vrs = evaluate.load(hf_real3d.metric_path("vrs"))
    >>> out = vrs.compute(
    ...     predictions=["left", "right", "chair", "table"],
    ...     references=[["left"], ["back"], ["chair"], ["chair"]],
    ...     group_ids=[7, 7, 8, 8],
    ...     rotations=[0, 90, 0, 90],
    ... )
    >>> print(out["p_at_least_1"], out["p_at_least_2"], out["vrs"], out["accuracy"])
    100.0 0.0 50.0 50.0
    >>> print(out["accuracy_per_viewpoint"], out["expected_p_at_least_2"])
    {'0': 100.0, '90': 0.0} 0.0
    >>> print(out["em"], out["em_all_rows"])  # EM of the original view, and of every row
    100.0 50.0
"""

_CITATION = """
@inproceedings{ma2026real3dqa,
  title={Do 3D Large Language Models Really Understand 3D Spatial Relationships?},
  author={Ma, Xianzheng and others},
  booktitle={ICLR},
  year={2026}
}
"""


def _features(with_types):
    out = []
    for pred in (datasets.Value("string"),):
        for ref in (datasets.Sequence(datasets.Value("string")), datasets.Value("string")):
            for gid in (datasets.Value("int64"), datasets.Value("string")):
                f = {"predictions": pred, "references": ref, "group_ids": gid,
                     "rotations": datasets.Value("int32")}
                if with_types:
                    f["question_types"] = datasets.Value("string")
                out.append(datasets.Features(f))
    return out


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Vrs(InMemoryCompute, evaluate.Metric):
    """Viewpoint Rotation Score (Real-3DQA): P_k over question groups asked from several
    viewpoints, their mean, and EM / refined EM."""

    def _info(self):
        if self.config_name not in ("default", "per_type"):
            raise KeyError(f"Expected config 'default' or 'per_type' but got {self.config_name!r}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=_features(self.config_name == "per_type"),
            reference_urls=["https://github.com/xianzhengma/Real-3DQA"],
        )

    def _compute(self, predictions, references, group_ids, rotations, question_types=None,
                 correctness="refined", leo_compatible=False, incomplete="error",
                 viewpoints=None, ci=False):
        if correctness not in ("refined", "exact"):
            raise ValueError(f"Expected correctness 'refined' or 'exact' but got {correctness!r}")
        em, refined = hf_real3d.scoring.answer_correctness(
            predictions, references, leo_compatible=leo_compatible)
        original = numpy.asarray(rotations) == 0
        out = {"em": float(em[original].mean() * 100) if original.any() else None,
               "em_refined": float(refined[original].mean() * 100) if original.any() else None,
               "em_all_rows": float(em.mean() * 100),
               "em_refined_all_rows": float(refined.mean() * 100)}
        out.update(hf_real3d.scoring.vrs(
            refined if correctness == "refined" else em, group_ids, rotations,
            viewpoints=viewpoints, incomplete=incomplete, ci=ci))
        out["correctness"] = correctness
        if question_types is not None:
            keep = numpy.flatnonzero(original)
            out["per_type"] = hf_real3d.scoring.em_scores(
                [predictions[i] for i in keep], [references[i] for i in keep],
                question_types=[question_types[i] for i in keep],
                leo_compatible=leo_compatible)["per_type"]
        return out
