"""Predictions of a trained SceneLM on a built dataset, in the format the metrics read
(JSONL with question_id, rotation_deg, prediction, log_prob), for the original view and
every rotated viewpoint, with optional input ablations and the attention-to-3D diagnostic.

    hf-real3d predict --model outputs/recipes/3drft --dataset_name data/synth \
        --out outputs/recipes/preds [--ablations no_3d shuffle_3d no_situation no_question]
    python recipes/predict.py --model outputs/recipes/3drft --out outputs/recipes/preds

``main`` returns the summary that ``summary.json`` holds; run from the command line, it is
printed as JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hf_real3d.modeling import ABLATIONS
from hf_real3d.training.args import RecipeParser, parse_recipe_args
from hf_real3d.training.predict import predict_dataset

__all__ = ["PredictArguments", "main", "make_parser", "parse"]


@dataclass
class PredictArguments:
    """``hf-real3d predict``'s settings: the model, the questions and what to record."""

    model: str = field(metadata={"help": "Saved SceneLM folder (with its tokenizer)."})
    out: str = field(metadata={"help": "Folder for the prediction files."})
    dataset_name: str = field(default="data/synth", metadata={
        "help": "Built dataset folder or Hub id."})
    dataset_config: str = field(default="sqa3d", metadata={"help": "Question config."})
    split: str = field(default="test", metadata={"help": "Split to predict."})
    viewpoints: int = field(default=4, metadata={"help": "0 or 1: original view only."})
    ablations: list[str] = field(default_factory=list, metadata={
        "help": f"Input ablations, among {ABLATIONS[1:]}."})
    attention: bool = field(default=False, metadata={"help": "Attention-to-3D diagnostic."})
    batch_size: int = field(default=128, metadata={"help": "Rows per forward pass."})


def make_parser() -> RecipeParser:
    """The command line's parser of :class:`PredictArguments` (trl's ``TrlParser``)."""
    return RecipeParser((PredictArguments,))


def parse(argv=None) -> tuple[PredictArguments]:
    """The arguments, from flags (``argv``; default: the command line's) or a ``--config``
    YAML file, read as the training recipes read theirs."""
    return parse_recipe_args(argv, classes=(PredictArguments,), recipe="hf-real3d predict")


def main(a: PredictArguments) -> dict:
    """Predict every question of the split (each viewpoint, each ablation); returns what
    :func:`predict_dataset` writes."""
    return predict_dataset(a.model, a.dataset_name, a.out, config=a.dataset_config,
                           split=a.split, viewpoints=a.viewpoints, ablations=a.ablations,
                           attention=a.attention, batch_size=a.batch_size)
