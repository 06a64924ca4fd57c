"""CircularEval for multiple-choice VQA (3DSRBench), as an evaluate metric."""

import datasets
import evaluate

import hf_real3d.scoring
import hf_real3d.srbench.rules
from hf_real3d.metric_base import InMemoryCompute

_DESCRIPTION = """
CircularEval asks an n-option question n times with its options circularly shifted and
counts it correct only if every shift is answered correctly, so a model cannot score by
favouring one option position. Predictions may be option letters or free-form answers:
each is read as the chosen `rule` reads it (`hf_real3d.srbench.rules`): `vlmevalkit`, the
default, is VLMEvalKit's exact matching, which the authors' results script also scores;
`lmms_eval` is lmms-eval's chain of regular expressions. An unreadable answer is wrong and
counted in `unparsed`, never a random pick. Reports circular accuracy, `vanilla` accuracy
(the mean over every row, as VLMEvalKit, lmms-eval and the authors' script report it) and
`vanilla_unshifted` (the mean over the rows in their original option order), each per
category. As the
field scores 3DSRBench, a mirrored item is a circular group of its own: give it its own group id.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): option letter or free-form answer per row.
    references (`list` of `str`): the correct option letter per row.
    group_ids (`list` of `str`): the question shared by a circular group's rows.
    shifts (`list` of `int`): 0 for the original option order, k for the k-th shift.
    options (`list` of `list` of `str`): the row's option texts, in the row's order.
    categories (`list` of `str`): question category per row (pass one constant if none).
    rule (`str`, optional): whose answer extraction: `vlmevalkit` (default), `authors` (the
        same extraction) or `lmms_eval`.
Returns:
    circular (`float`, 0-100): % of groups with every shift correct.
    vanilla (`float`, 0-100): accuracy over every row (VLMEvalKit's, lmms-eval's).
    vanilla_unshifted (`float`, 0-100): accuracy over the rows with shift 0.
    per_category, vanilla_per_category, vanilla_unshifted_per_category (`dict`): the same
        per category.
    groups, n, unparsed (`int`).
Examples:
    >>> import hf_real3d
    >>> circ = evaluate.load(hf_real3d.metric_path("circular_eval"))
    >>> out = circ.compute(
    ...     predictions=["A", "B", "The answer is A", "A"],
    ...     references=["A", "B", "A", "B"],
    ...     group_ids=["q1", "q1", "q2", "q2"],
    ...     shifts=[0, 1, 0, 1],
    ...     options=[["yes", "no"], ["no", "yes"], ["up", "down"], ["down", "up"]],
    ...     categories=["height_higher"] * 4,
    ... )
    >>> print(out["vanilla"], out["circular"])
    75.0 50.0
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
class CircularEval(InMemoryCompute, evaluate.Metric):
    """CircularEval (3DSRBench): a question counts only if every circular shift of its options
    is answered correctly."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": datasets.Value("string"),
                "references": datasets.Value("string"),
                "group_ids": datasets.Value("string"),
                "shifts": datasets.Value("int32"),
                "options": datasets.Sequence(datasets.Value("string")),
                "categories": datasets.Value("string"),
            }),
            reference_urls=["https://3dsrbench.github.io"],
        )

    def _compute(self, predictions, references, group_ids, shifts, options, categories,
                 rule="vlmevalkit"):
        correct, unparsed = hf_real3d.srbench.rules.rule_hits(rule, predictions, references,
                                                              options)
        out = hf_real3d.scoring.circular_eval(correct.astype(bool), group_ids, options=options,
                                              shifts=shifts, categories=categories)
        out["unparsed"] = unparsed
        out["rule"] = rule
        return out
