"""The stress test's settings: one dataclass, which the command line parses and
:func:`hf_real3d.debias.run.run_stress_test` takes whole (light: no model or dataset stack
loads with it)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from hf_real3d._fields import help_field

__all__ = ["PruneConfig", "StressTestConfig"]


@dataclass
class PruneConfig:
    """How :func:`hf_real3d.debias.stress.prune` fits and stops (see StressTestConfig)."""
    diagnostic: str = "rf"
    folds: int = 5
    seed: int = 0
    type_as_feature: bool = False
    round_fraction: float = 0.05
    margin: float = 2.0
    budget: float | None = None


@dataclass
class StressTestConfig:
    """Test-set stress test (after Brown et al. 2025): a text-only diagnostic trained by
    grouped k-fold cross-validation on the set's own non-visual inputs; --prune runs
    iterative bias pruning. What ``hf-real3d stress-test`` parses and
    :func:`hf_real3d.debias.run.run_stress_test` takes, whole."""
    dataset: str = help_field("A folder this library built or imported, an SQA3D folder "
                              "(questions + annotations JSON), a 3DSRBench .tsv, or a Hub "
                              "dataset id with the --*-column options.")
    out: str = help_field("Folder for stress_test.json, scores.jsonl, stress_test.png and "
                          "report.md.")
    config: str | None = help_field("Config of a dataset folder (default: real3dqa, "
                                    "real_scanqa, or the 3DSRBench real/synthetic_common).",
                                    default=None)
    split: str = help_field("Split to read.", default="test")
    folds: int = help_field("Cross-validation folds.", default=5)
    group_by: str | None = help_field("Column whose values stay in one fold (default: "
                                      "scene_id; 3DSRBench: the base qid).", default=None)
    diagnostic: str = help_field("rf: a random forest over word counts (its importances name "
                                 "the words that carry the score); logreg: a logistic "
                                 "regression over TF-IDF; lm: a causal LM fine-tuned per fold "
                                 "through the library's trainer (--lm_path).", default="rf",
                                 choices=("rf", "logreg", "lm"))
    lm_path: str | None = help_field("With --diagnostic lm: a local causal-LM folder (with its "
                                     "tokenizer) or a saved SceneLM (its language model, e.g. "
                                     "the blind one); default: a small Llama built from "
                                     "config.", default=None)
    lm_epochs: float = help_field("With --diagnostic lm: fine-tuning epochs per fold.",
                                  default=4.0)
    question_column: list[str] = help_field("Columns joined into the text the diagnostic "
                                            "reads (a Hub dataset).", default_factory=list)
    answer_column: str | None = help_field("Answer column (a string or a list whose first "
                                           "entry counts).", default=None)
    type_column: str | None = help_field("Question-type column (default: the question's "
                                         "first word).", default=None)
    id_column: str | None = help_field("Item id column (a Hub or saved dataset; default: "
                                       "question_id, else id, else the row number).",
                                       default=None)
    type_as_feature: bool = help_field("Let the diagnostic read each item's question type too "
                                       "(off: the type only groups the report).",
                                       default=False)
    exclude: str | None = help_field("A dataset whose ids are left out (the questions a "
                                     "filter removed: --dataset sqa3d --exclude real3dqa).",
                                     default=None)
    prune: bool = help_field("Run iterative bias pruning and write the kept items as "
                             "<config>_tst (a folder this library built) or, in the input's "
                             "own form, under OUT/kept.", default=False)
    round_fraction: float = help_field("Share of the original set removed per pruning "
                                       "round.", default=PruneConfig.round_fraction)
    margin: float = help_field("Pruning stops when solvability is within this many points "
                               "of the majority-answer baseline.",
                               default=PruneConfig.margin)
    budget: float | None = help_field("At most this many removals (a fraction if < 1).",
                                      default=None)
    seed: int = help_field("Seed of the folds and the forest.", default=0)

    def pruning(self) -> PruneConfig:
        """The settings that :func:`hf_real3d.debias.stress.prune` reads."""
        return PruneConfig(**{f.name: getattr(self, f.name) for f in fields(PruneConfig)})

    def check(self) -> None:
        """Refuse settings that would do nothing or something else than meant, before any
        work."""
        if self.folds < 2:
            raise ValueError(f"`folds` {self.folds}: expected at least 2")
        if not 0 < self.round_fraction < 1:
            raise ValueError(f"`round_fraction` {self.round_fraction}: expected a share of the "
                             "set in (0, 1), e.g. 0.05 for 5%")
        if self.margin < 0:
            raise ValueError(f"`margin` {self.margin}: expected points >= 0")
        b = self.budget
        if b is not None and (b <= 0 or (b >= 1 and b != int(b))):
            raise ValueError(f"`budget` {b}: expected a fraction in (0, 1) or a whole number "
                             "of items >= 1")
        defaults = {f.name: f.default for f in fields(self)}
        if not self.prune and any(getattr(self, k) != defaults[k]
                                  for k in ("budget", "round_fraction", "margin")):
            raise ValueError("`budget`, `round_fraction` and `margin` set how pruning runs; "
                             "add `prune`")
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise FileExistsError(f"`out` {self.out}: exists and is not a folder; give another "
                                  "`out`")
