"""The examples in the scoring functions' docstrings run, and say what the functions do."""

import doctest
import importlib

import pytest

# the modules whose functions score, match or summarise: each carries examples
MODULES = ["hf_real3d.scoring", "hf_real3d.answers", "hf_real3d.stats", "hf_real3d.tables",
           "hf_real3d.srbench.rules"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{name}: {result.failed} example(s) failed"


def test_every_public_scoring_function_has_an_example():
    scoring = importlib.import_module("hf_real3d.scoring")
    for name in ("answer_correctness", "em_scores", "vrs", "vrs_from_counts",
                 "expected_p_at_least", "group_all_correct", "circular_eval", "flip_eval",
                 "chance_accuracy"):
        assert ">>> " in (getattr(scoring, name).__doc__ or ""), name
