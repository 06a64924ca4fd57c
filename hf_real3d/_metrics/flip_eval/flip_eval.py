"""FlipEval (and flip+circular) for multiple-choice VQA (3DSRBench), as an evaluate metric."""

import datasets
import evaluate

import hf_real3d.scoring
import hf_real3d.srbench.rules
from hf_real3d.metric_base import InMemoryCompute

_DESCRIPTION = """
FlipEval pairs each question with the same question asked of the horizontally mirrored
image, whose answer follows the mirrored scene (a left/right answer flips, a height answer
stays). A pair counts only if both are right, which removes a left/right bias a model may
have learned from the data. As VLMEvalKit and lmms-eval score 3DSRBench, each circular order
is its own pair. Config `flip_circular` groups every circular shift of the original and of
the mirrored question; a group counts only if all its rows are right. Predictions may be
letters or free-form answers, read as the chosen `rule` reads them
(`hf_real3d.srbench.rules`: `vlmevalkit` by default, or `lmms_eval`; unreadable = wrong).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): option letter or free-form answer per row.
    references (`list` of `str`): the correct option letter per row.
    group_ids (`list` of `str`): the pair (config `default`) or the pair with all its
        circular shifts (config `flip_circular`).
    flipped (`list` of `bool`): whether the row is the flipped copy.
    options (`list` of `list` of `str`): the row's option texts.
    categories (`list` of `str`): question category per row.
    rule (`str`, optional): whose answer extraction: `vlmevalkit` (default), `authors` (the
        same extraction) or `lmms_eval`.
Returns:
    flip or flip_circular (`float`, 0-100): % of groups with every row correct.
    per_category (`dict`), groups, n, unparsed (`int`).
Examples:
    >>> import hf_real3d
    >>> flip = evaluate.load(hf_real3d.metric_path("flip_eval"))
    >>> out = flip.compute(
    ...     predictions=["A", "B", "A", "A"],
    ...     references=["A", "B", "A", "B"],
    ...     group_ids=["q1", "q1", "q2", "q2"],
    ...     flipped=[False, True, False, True],
    ...     options=[["left", "right"]] * 4,
    ...     categories=["orientation_on_the_left"] * 4,
    ... )
    >>> print(out["flip"])
    50.0
"""

_CITATION = """
@article{ma20243dsrbench,
  title={3DSRBench: A Comprehensive 3D Spatial Reasoning Benchmark},
  author={Ma, Wufei and others},
  journal={arXiv preprint arXiv:2412.07825},
  year={2024}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FlipEval(InMemoryCompute, evaluate.Metric):
    """FlipEval (3DSRBench): an item and its mirrored twin count only if both are answered
    correctly."""

    def _info(self):
        if self.config_name not in ("default", "flip_circular"):
            raise KeyError(
                f"Expected config 'default' or 'flip_circular' but got {self.config_name!r}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Value("string"),
                "group_ids": datasets.Value("string"),
                "flipped": datasets.Value("bool"),
                "options": datasets.Sequence(datasets.Value("string")),
                "categories": datasets.Value("string"),
            }),
            reference_urls=["https://3dsrbench.github.io"],
        )

    def _compute(self, predictions, references, group_ids, flipped, options, categories,
                 rule="vlmevalkit"):
        correct, unparsed = hf_real3d.srbench.rules.rule_hits(rule, predictions, references,
                                                              options)
        out = hf_real3d.scoring.flip_eval(correct.astype(bool), group_ids, flipped,
                                          categories=categories,
                                          circular=self.config_name == "flip_circular")
        out["unparsed"] = unparsed
        out["rule"] = rule
        return out
