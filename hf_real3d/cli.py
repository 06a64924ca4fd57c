"""The ``hf-real3d`` command line.

Each command is one options dataclass (every field has ``help``), parsed with
``transformers.HfArgumentParser``'s rules (by :class:`hf_real3d._argparse.DataclassParser`,
which does not import transformers), and one library call. Flags are written
``--field_name`` or ``--field-name``. Every prediction input is ``NAME=FILE[,FILE...]``.

Errors are one line on stderr with exit code 2 (``--debug`` shows the traceback); Ctrl-C
exits with 130 and SIGTERM with 143, after the library has removed its temporaries.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import os
import signal
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._threads import bound_openmp_spinning

bound_openmp_spinning()  # before anything imports torch (the demo, training, VLMs)

from hf_real3d._argparse import DataclassParser  # noqa: E402
from hf_real3d._fields import help_field  # noqa: E402
from hf_real3d._runtime import Terminated, check_stop, clear_stop, no_gc, request_stop  # noqa: E402
from hf_real3d.specs import named_files, prediction_pairs  # noqa: E402
from hf_real3d.synth.config import SRBenchConfig, SynthConfig  # noqa: E402

__all__ = ["main", "COMMANDS", "Command"]

_SYNTH = SynthConfig()  # the one definition of the synthetic benchmark's default sizes


# --- options --------------------------------------------------------------------------


@dataclass
class SynthOptions:
    """Generates the embedded synthetic benchmark: procedural rooms with SQA3D-format questions
    (train/val/test) and ScanNet-format scenes, as a dataset folder."""
    out: str = help_field("Folder to write: a dataset folder (README card + parquet configs "
                     "`sqa3d` and `scenes`) with the SQA3D-format files in sqa3d/ and ScanNet "
                     "scenes in scans/.")
    seed: int = help_field("Random seed; the benchmark is a pure function of it.",
                           default=_SYNTH.seed)
    train_scenes: int = help_field("Scenes in the train split.", default=_SYNTH.scenes["train"])
    val_scenes: int = help_field("Scenes in the val split.", default=_SYNTH.scenes["val"])
    test_scenes: int = help_field("Scenes in the test split.", default=_SYNTH.scenes["test"])
    questions_per_scene: int | None = help_field(
        "Questions per scene for every split (default: "
        + "/".join(str(v) for v in _SYNTH.questions_per_scene.values()) + " train/val/test).",
        default=None)
    guessable_fraction: float = help_field(
        "Share of questions a text-only model can answer from language priors.",
        default=_SYNTH.guessable_fraction)
    counter_prior_rate: float = help_field(
        "Share of usual-colour objects (whiteboard, refrigerator, ...) given another colour, "
        "whose colour questions become counter-prior.", default=_SYNTH.counter_prior_rate)
    counter_prior_fraction: float = help_field(
        "Share of questions that are counter-prior (asked about such an object).",
        default=_SYNTH.counter_prior_fraction)
    workers: int | None = help_field("Worker processes (default: up to 2).", default=None)
    no_scenes: bool = help_field("Write only the question files (no scans/, no `scenes` config).",
                            default=False)
    json: bool = help_field("Also print the summary as JSON.", default=False)

    def config(self) -> SynthConfig:
        cfg = SynthConfig(seed=self.seed, guessable_fraction=self.guessable_fraction,
                          counter_prior_rate=self.counter_prior_rate,
                          counter_prior_fraction=self.counter_prior_fraction,
                          scenes={"train": self.train_scenes, "val": self.val_scenes,
                                  "test": self.test_scenes})
        if self.questions_per_scene is not None:
            cfg.questions_per_scene = {s: self.questions_per_scene for s in cfg.scenes}
        return cfg


@dataclass
class EvaluateOptions:
    """Prediction files (NAME=FILE[,FILE...] per model): JSONL rows {"question_id",
    "prediction", "rotation_deg"?, "log_prob"?}, one row per (question_id, rotation_deg),
    rotation_deg being the degrees the agent turned clockwise (0 when absent); or the
    official Real-3DQA files (JSON lists of {question_id, response_pred, response_gt}, the
    viewpoint read from the file name, e.g. rotation_90.json, or from a 01/02/03 id
    suffix). Which rows give which figure: EM and refined EM over the 0-degree rows of all
    questions (original) and of the de-biased ones (debiased); P_k and VRS over rotation
    groups with every viewpoint. --reproduce_official reproduces the published numbers."""
    dataset: str = help_field("References: a Real-3DQA release folder, a dataset folder built by "
                         "this library, or an SQA3D folder.")
    predictions: list[str] = help_field(
        "One entry per model, NAME=FILE[,FILE...]: JSONL rows {question_id, prediction, "
        "rotation_deg?, log_prob?} or the official per-viewpoint files (response_pred).")
    out: str = help_field("Folder for metrics.json, report.md, pk.png and radar.png.")
    reproduce_official: bool = field(default=False, metadata={
        "help": "Reproduce the official Real-3DQA / LEO numbers exactly (their matching rule: "
                "an empty prediction is refined-correct, the first substring hit decides). "
                "Alias: --leo_compatible.",
        "aliases": ["--leo_compatible", "--leo-compatible"]})
    allow_missing: bool = help_field("Count missing predictions as wrong; without it a figure "
                                "whose rows are not all predicted is not computed (a note "
                                "says which).", default=False)
    pruned: bool = help_field("Score on the questions iterative bias pruning kept (configs "
                              "real3dqa_tst and rotations_tst of hf-real3d stress-test --prune) "
                              "in place of real3dqa and rotations.", default=False)
    exclude_flagged: bool = help_field("Leave out of P_k and VRS the rotation groups in which "
                                       "hf-real3d check-rotations finds a defect (a folder's "
                                       "rotation_checks config; a release folder is checked on "
                                       "the fly by the text rules).", default=False)
    exclude_needs_scene: bool = help_field("Also leave out of P_k and VRS the groups with an "
                                           "item whose text alone cannot decide (verdict "
                                           "needs_scene), besides those --exclude-flagged "
                                           "leaves out.", default=False)


def _push_to_hub() -> Any:
    return help_field("Also publish the folder as this dataset repo (ORG/NAME).", default=None)


@dataclass(kw_only=True)
class _Publishing:
    license: str = help_field("License identifier for the dataset card; it depends on your data "
                         "(SQA3D is apache-2.0, ScanNet scans follow the ScanNet Terms of Use, "
                         "3DSRBench is cc-by-4.0).", default="other")
    push_to_hub: str | None = _push_to_hub()


@dataclass
class _SQA3DInputs:
    sqa3d: str = help_field("Folder with SQA3D question/annotation files.")
    scenes: str = help_field("Folder of ScanNet-format scene folders.")


@dataclass
class BuildReal3DQAOptions(_Publishing, _SQA3DInputs):
    """Rotation recomputes answers from scene geometry: synthetic questions (which record
    their semantics) all rotate, but real SQA3D questions rotate only when they match a
    directional template (136 of the 3,519 test questions), so a VRS built this way is not
    comparable with the paper's Table 3; for that, import the official release
    (import-real3dqa). Every build prints its coverage."""

    out: str = help_field("Dataset folder to write.")
    full: list[str] = help_field("Predictions of a model WITH its 3D input, NAME=FILE (repeatable "
                            "by giving several); pairs with --blind of the same NAME.",
                            default_factory=list)
    blind: list[str] = help_field("Predictions of the same model WITHOUT 3D, NAME=FILE.",
                             default_factory=list)
    judge: list[str] = help_field("Predictions of a text-only judge, NAME=FILE.",
                             default_factory=list)
    split: str = help_field("SQA3D split to build from.", default="test")
    viewpoints: int = help_field("Viewpoints per question (360 must divide by it).", default=4)
    allow_judge_failures: bool = help_field("Use a --judge file even when more than a tenth of "
                                            "its questions failed (refused otherwise).",
                                            default=False)


@dataclass
class ImportReal3DQAOptions:
    """Imports the official Real-3DQA release files as a dataset folder (configs sqa3d, real3dqa,
    rotations), with the importer's quality flags."""
    release: str = help_field("Folder with the official Real-3DQA release files.")
    out: str = help_field("Dataset folder to write.")
    push_to_hub: str | None = _push_to_hub()


@dataclass
class DrawOptions(_SQA3DInputs):
    """Draws a question top-down from each of its viewpoints (PNG), with the agent, the objects and
    the answer."""
    question_id: int = help_field("The question to draw.")
    out: str = help_field("PNG file to write.")
    split: str = help_field("SQA3D split holding the question.", default="test")
    viewpoints: int = help_field("Viewpoints to draw.", default=4)


@dataclass
class BuildRealScanQAOptions(_Publishing):
    """Builds Real-ScanQA: ScanQA questions filtered like Real-3DQA (no rotation: ScanQA has
    no situation or agent pose)."""
    scanqa: str = help_field("ScanQA JSON with answers (e.g. ScanQA_v1.0_val.json, or the "
                             "scanqa/ folder of `hf-real3d synth`'s output).")
    out: str = help_field("Dataset folder to write (configs scanqa, real_scanqa, "
                          "filtered_out).")
    full: list[str] = help_field("Full-model predictions, NAME=FILE (JSONL or JSON rows "
                                 "question_id, prediction).", default_factory=list)
    blind: list[str] = help_field("Blind-model predictions of the same NAMEs.",
                                  default_factory=list)
    judge: list[str] = help_field("Text-only judge predictions, NAME=FILE.",
                                  default_factory=list)
    allow_judge_failures: bool = help_field("Use a --judge file even when more than a tenth of "
                                            "its questions failed (refused otherwise).",
                                            default=False)
    license: str = help_field("License identifier for the dataset card.", default="other",
                              kw_only=True)


@dataclass
class EvaluateRealScanQAOptions:
    """Scores predictions on Real-ScanQA: EM / refined EM and ScanQA's captioning metrics
    (no rotation: ScanQA has no agent pose)."""
    dataset: str = help_field("Folder built by build-real-scanqa (or a ScanQA JSON file).")
    predictions: list[str] = help_field("One entry per model, NAME=FILE[,FILE...].")
    out: str = help_field("Folder for metrics.json and report.md.")
    reproduce_official: bool = help_field("LEO's matching rule, to reproduce published "
                                          "numbers.", default=False)
    no_captions: bool = help_field("Skip the captioning metrics (they need Java).",
                                   default=False)


@dataclass
class RenderViewsOptions:
    """Adds the `views` config (a BEV with numbered objects + the agent's egocentric frame
    per question and viewpoint) to a dataset folder with scenes, for VLM-based 3D-LLMs."""
    dataset: str = help_field("Dataset folder with a `scenes` config (hf-real3d synth, "
                              "build-real3dqa).")
    size: int = help_field("Image side in pixels.", default=128)


@dataclass
class Build3DSRBenchOptions(_Publishing):
    """Builds a 3DSRBench dataset folder from the official TSV and/or synthetic renders (common and
    uncommon cameras)."""
    out: str = help_field("Dataset folder to write (configs real, synthetic_common, "
                     "synthetic_uncommon).")
    tsv: str | None = help_field("Official VLMEvalKit TSV for the `real` config.", default=None)
    scenes: int = help_field("Synthetic scenes to render (0: none).",
                             default=SRBenchConfig.scenes)
    questions_per_scene: int = help_field("Question slots per synthetic scene.",
                                          default=SRBenchConfig.questions_per_scene)
    seed: int = help_field("Random seed of the synthetic scenes.", default=0)
    workers: int = help_field("Render worker processes.", default=2)
    export_tsv: bool = help_field("Also write VLMEvalKit TSVs of the synthetic configs.",
                             default=False)
    license: str = help_field("License identifier for the dataset card.", default="cc-by-4.0",
                         kw_only=True)


@dataclass
class Evaluate3DSRBenchOptions:
    """Scores 3DSRBench answers: vanilla, CircularEval, FlipEval and flip+circular accuracy per
    category, beside chance, always-A and a text-only baseline computed on the scored set."""
    out: str = help_field("Folder for metrics.json and report.md.")
    dataset: str | None = help_field(
        "Folder built by build-3dsrbench. Without it, each --predictions file is scored on "
        "the items it carries (VLMEvalKit's prediction or result table, lmms-eval's samples).",
        default=None)
    rule: str = help_field(
        "Whose scorer the figures reproduce: vlmevalkit (VLMEvalKit's exact matching and its "
        "four settings; the default), authors (the 3DSRBench authors' results script, the "
        "paper's tables, on VLMEvalKit's hits), lmms_eval (lmms-eval's 3dsrbench tasks). A "
        "VLMEvalKit result table's hit column (vlmevalkit, authors) and lmms-eval's sample "
        "scores (lmms_eval) are taken as given.", default="vlmevalkit",
        choices=("vlmevalkit", "authors", "lmms_eval"))
    configs: list[str] = help_field("Configs to score.",
                               default_factory=lambda: ["synthetic_common", "synthetic_uncommon"])
    predictions: list[str] = help_field(
        "One entry per model, NAME=FILE[,FILE...]: JSONL rows {config?, qid, prediction}, a "
        "VLMEvalKit table (.xlsx/.tsv/.csv) or lmms-eval --log_samples JSONL.",
        default_factory=list)
    model: list[str] = help_field("Local image-text-to-text model folders, NAME=PATH.",
                             default_factory=list)
    text_only: str = help_field(
        "The text-only baseline: the stress test's diagnostic (rf, logreg, lm) trained by "
        "grouped k-fold on the scored set's own questions, each answered by the model that "
        "did not see its fold; 'none' for no such row.", default="rf",
        choices=("rf", "logreg", "lm", "none"))
    text_only_folds: int = help_field("Folds of the text-only baseline.", default=5)
    seed: int = help_field("Seed of the text-only baseline's folds and diagnostic.", default=0)


@dataclass
class StressTestOptions:
    """Test-set stress test (after Brown et al. 2025): a text-only diagnostic trained by
    grouped k-fold cross-validation on the set's own non-visual inputs; --prune runs
    iterative bias pruning."""
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
                                       "round.", default=0.05)
    margin: float = help_field("Pruning stops when solvability is within this many points "
                               "of the majority-answer baseline.", default=2.0)
    budget: float | None = help_field("At most this many removals (a fraction if < 1).",
                                      default=None)
    seed: int = help_field("Seed of the folds and the forest.", default=0)


@dataclass
class CheckRotationsOptions:
    """Checks every rotated item against its turn, with named rules: text that did not
    turn, the same object faced, a mirror in place of a turn, directions that moved the
    wrong way; with scenes, each named object against the quadrant of its box centre seen
    from the turned pose, and the answer against the scene's. Writes OUT/check.json,
    OUT/flags.jsonl and OUT/report.md; a dataset folder also gets the configs
    rotation_checks and rotations_checked (what `evaluate --exclude-flagged` leaves in)."""
    dataset: str = help_field("The official release folder, a folder of rotation_{k}.json "
                              "files in its format, or a dataset folder with a rotations "
                              "config (build-real3dqa, import-real3dqa, rotate).")
    out: str = help_field("Folder for check.json, flags.jsonl and report.md.")
    scenes: str | None = help_field("Folder of ScanNet-format scenes (as build-real3dqa reads "
                                    "them) for the scene rules; default: the dataset folder's "
                                    "scenes config when it has one, else text rules only.",
                                    default=None)
    margin: float = help_field("Degrees by which an object may lie outside the direction a "
                               "text gives it and still pass the scene rules.", default=15.0)
    no_configs: bool = help_field("Do not add the rotation_checks / rotations_checked configs "
                                  "to a dataset folder.", default=False)


@dataclass(kw_only=True)
class _LLMOptions:
    """The model a language-model step asks (a server or a local folder), and how a run asks
    it: trying before spending (--dry_run, --limit), offline batches (--batch_out, --batch_in)
    and when to stop (--max_failures)."""
    llm_url: str | None = help_field("Base URL of an OpenAI-compatible server (vLLM, TGI, "
                                     "`transformers serve`, Ollama, a hosted API), e.g. "
                                     "http://127.0.0.1:8000/v1; with --llm_model.",
                                     default=None)
    llm_model: str | None = help_field("The model name the server lists (GET /v1/models).",
                                       default=None)
    llm_path: str | None = help_field("Or: a local transformers causal-LM folder with its "
                                      "tokenizer, run in this process.", default=None)
    llm_api_key_env: str | None = help_field("Name of the environment variable holding the "
                                             "server's API key (never written anywhere).",
                                             default=None)
    llm_cache: str | None = help_field("Folder of cached replies for this model (default: one "
                                       "per model and cache tag under $HF_REAL3D_CACHE/llm or "
                                       "~/.cache/huggingface/hf_real3d/llm).", default=None)
    no_llm_cache: bool = help_field("Ask every prompt again (nothing read from or written to "
                                    "the cache).", default=False)
    llm_cache_tag: str | None = help_field("A word that joins the cache key (a date, a model "
                                           "revision): replies cached under another tag are "
                                           "not reused.", default=None)
    llm_no_probe: bool = help_field("Do not ask GET /models first (gateways without it); the "
                                    "cache key then holds the model name and the cache tag "
                                    "only, not what the server says of the model.",
                                    default=False)
    temperature: float = help_field("Sampling temperature (0: greedy, the default).",
                                    default=0.0)
    seed: int = help_field("Seed sent with every request (and set for a local model); also "
                           "draws the --limit subset.", default=0)
    max_tokens: int = help_field("Longest reply, in tokens; a reply cut there is not used "
                                 "('cut at max_tokens').", default=128)
    llm_timeout: float = help_field("Seconds to wait for one reply.", default=60.0)
    llm_concurrency: int | None = help_field(
        "Requests in flight at once (a server), or prompts per batch (a local folder). "
        "Default: 64 for a server whose /models card names a batching engine (vLLM, SGLang, "
        "TGI), 8 for other servers and for a local folder.", default=None)
    llm_retries: int = help_field("Retries of a request answered 429 or 5xx, timed out or "
                                  "cut off (the openai client's, with exponential backoff).",
                                  default=4)
    llm_reask: int = help_field("Ask a reply that cannot be used (does not parse, cut at "
                                "max_tokens) again with the next seed, up to N times; each "
                                "attempt is cached and recorded (at temperature 0 a server "
                                "usually answers the same).", default=0)
    llm_structured: str = help_field(
        "Structured output for replies with a JSON shape (rotate): auto asks for the JSON "
        "schema (response_format), falls back to json_object and then to plain prompts when "
        "the server refuses (the record says so); json_schema, json_object or none ask for "
        "that one only.", default="auto", choices=("auto", "json_schema", "json_object", "none"))
    max_failures: int = help_field("Stop the run after this many failed requests in a row, "
                                   "with the reason (0: never); the replies received stay "
                                   "cached.", default=20)
    limit: int | None = help_field("Only N questions, drawn with --seed (try a prompt or a "
                                   "server before the whole run).", default=None)
    dry_run: bool = help_field("Print the prompts that would be sent and how many requests, "
                               "and send none (the server is not contacted; nothing is "
                               "written).", default=False)
    batch_out: str | None = help_field("Write the requests not in the cache as an OpenAI Batch "
                                       "API JSONL file (what `vllm run-batch -i` reads) and "
                                       "send none.", default=None)
    batch_in: str | None = help_field("Read the replies from a Batch API output file (`vllm "
                                      "run-batch -o`) in place of a server: into the cache and "
                                      "the output, as a live run.", default=None)

    def check(self) -> None:
        """Every run option checked before any work (the commands call it first, through
        :meth:`client`)."""
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: expected at least 1 question")
        if self.llm_reask < 0:
            raise ValueError(f"--llm_reask {self.llm_reask}: expected 0 or more re-asks")
        if self.max_failures < 0:
            raise ValueError(f"--max_failures {self.max_failures}: expected 0 (never stop) or "
                             "more")
        if self.llm_concurrency is not None and self.llm_concurrency < 1:
            raise ValueError(f"--llm_concurrency {self.llm_concurrency}: expected at least 1")
        if self.llm_retries < 0 or self.llm_timeout <= 0:
            raise ValueError(f"--llm_retries {self.llm_retries} must be >= 0 and --llm_timeout "
                             f"{self.llm_timeout} > 0")
        if self.batch_in and self.batch_out:
            raise ValueError("--batch_out and --batch_in: one at a time (write the requests, "
                             "run the batch, then read its output)")
        if self.dry_run and (self.batch_in or self.batch_out):
            raise ValueError("--dry_run with --batch_out or --batch_in: a dry run writes and "
                             "reads nothing; drop one")
        if (self.batch_in or self.batch_out) and self.llm_path:
            raise ValueError("--batch_out/--batch_in: a batch file is for a server "
                             "(--llm_url, --llm_model), not a local folder (--llm_path)")
        if self.batch_in and not Path(self.batch_in).is_file():
            raise FileNotFoundError(f"--batch_in {self.batch_in}: no such file (the output "
                                    "file of the batch run, e.g. vllm run-batch -o FILE)")
        if self.batch_out and Path(self.batch_out).is_dir():
            raise FileExistsError(f"--batch_out {self.batch_out}: a folder; give a .jsonl file")
        if self.llm_cache_tag is not None and not self.llm_cache_tag.strip():
            raise ValueError("--llm_cache_tag: empty; give a word (a date, a model revision)")

    def client(self):
        self.check()
        # the client (and the openai package) only for the commands that ask a model
        from hf_real3d.llm import Decoding, LLMClient

        offline = bool(self.batch_in or self.batch_out or self.dry_run)
        return LLMClient(url=self.llm_url, model=self.llm_model, path=self.llm_path,
                         api_key_env=None if offline else self.llm_api_key_env,
                         decoding=Decoding(self.temperature, self.seed, self.max_tokens),
                         timeout=self.llm_timeout, concurrency=self.llm_concurrency,
                         retries=self.llm_retries, cache_dir=self.llm_cache,
                         cache=not self.no_llm_cache, cache_tag=self.llm_cache_tag,
                         probe=not (self.llm_no_probe or self.batch_in or self.batch_out),
                         structured=self.llm_structured, reask=self.llm_reask,
                         max_failures=self.max_failures,
                         batch=bool(self.batch_in or self.batch_out))

    def run_options(self) -> dict[str, Any]:
        return {"limit": self.limit, "dry_run": self.dry_run, "batch_out": self.batch_out,
                "batch_in": self.batch_in}


@dataclass
class JudgeOptions(_LLMOptions):
    """The text-only filter of Real-3DQA (section 3.1): a language model answers each question
    from its situation and question alone; what it answers correctly, build-real3dqa --judge
    (and build-real-scanqa --judge) removes. Writes OUT (JSONL question_id, prediction,
    finish_reason, tokens) and OUT's stem + .judge.json (the model, the prompt, the counts,
    the tokens). A run in which no question was answered writes nothing and exits 2."""
    dataset: str = help_field("An SQA3D folder, a ScanQA JSON file, or a dataset folder built "
                              "by this library.")
    out: str = help_field("Predictions file to write (.jsonl).")
    prompt: str | None = help_field("A prompt template of the shape of "
                                    "hf_real3d/prompts/judge.json (default: that file).",
                                    default=None)
    split: str = help_field("SQA3D split to read.", default="test")


@dataclass
class RotateOptions(_LLMOptions):
    """Every question from each turned viewpoint: from scene geometry where it applies, else
    rewritten by a language model from a template with in-context examples (and, with
    scenes, what the agent sees after the turn). Replies that do not parse, are cut at
    max_tokens, leave a field empty, repeat the original or name no direction are excluded
    with the reason, and so are the other viewpoints of their question; a situation that names
    no direction is not asked without a scene ('no heading cue without a scene'). Writes a
    Real-3DQA dataset folder (configs real3dqa, rotations with source and raw_reply columns,
    rotations_excluded, llm_calls) and checks it at once (OUT/checks, configs rotation_checks
    and rotations_checked)."""
    dataset: str = help_field("An SQA3D folder or a dataset folder built by this library (its "
                              "real3dqa config: the questions the filter kept).")
    out: str = help_field("Dataset folder to write (never an input, nor inside one).")
    scenes: str | None = help_field("Folder of ScanNet-format scenes (default: the dataset "
                                    "folder's scenes config, if any).", default=None)
    prompt: str | None = help_field("A prompt template of the shape of "
                                    "hf_real3d/prompts/rotate.json (default: that file).",
                                    default=None)
    split: str = help_field("SQA3D split to read.", default="test")
    viewpoints: int = help_field("Viewpoints per question (360 must divide by it).", default=4)


@dataclass
class ReviewInitOptions:
    """Prepares a review folder without a browser (for labs that review elsewhere and bring
    the decisions back with review-import): review.json (the rotation set and the queue's
    settings) and the checker's suggestions stored in REVIEW/checks (verdict, sense, rules and
    proposed repairs per rotated item), read from --checks or from the dataset folder's own
    checks/ when they cover the set, else computed once."""
    dataset: str = help_field("The rotation set to review: a release folder, a folder of "
                              "rotation_{k}.json files, or a dataset folder.")
    review: str = help_field("The review folder to make (new or empty).")
    checks: str | None = help_field("A hf-real3d check-rotations output folder of this set "
                                    "(verdicts.jsonl, repairs.jsonl) to take the suggestions "
                                    "from.", default=None)
    scenes: str | None = help_field("ScanNet-format scenes for the checker's scene rules, when "
                                    "it runs.", default=None)
    repeat: float | None = help_field("Share of items shown a second time, unannounced "
                                      "(default 0.1).", default=None)
    gap: int | None = help_field("How many items later a repeat comes (default 10).",
                                 default=None)
    seed: int | None = help_field("Seed of the repeats (default 0).", default=None)


@dataclass
class ReviewImportOptions:
    """Appends decisions made in another tool (a CSV with a header row, or JSONL) to an
    annotator's file, each line checked as the Review tab checks it: question_id,
    rotation_deg, decision (accept, correct, discard), reason (needed to correct or
    discard), situation and answers (a correction's whole text; answers separated by |), and
    repeat (a second look). Every line is checked before any is written. The folder may be
    given without --review: hf-real3d review-import REVIEW --annotator NAME --from FILE."""
    PLAIN = "review"
    review: str = help_field("The review folder (hf-real3d review-init or explore --review).")
    annotator: str = help_field("Whose decisions these are (names their file).")
    from_file: str = field(metadata={"help": "The CSV or JSONL file of decisions.",
                                     "aliases": ["--from"]})
    revise: bool = help_field("Record lines about items the annotator already judged as new "
                              "decisions that supersede the standing ones (the history "
                              "stays); without it such a line is refused.", default=False)


@dataclass
class ReviewStatsOptions:
    """Agreement of a review folder, on what the export compares (the decision, and a
    correction's text up to case and spaces): Cohen's kappa for each pair of annotators with
    its n and a 95% bootstrap interval, pooled weighted by items; self-consistency on the
    items shown twice, pooled with its n; decisions by checker verdict and rule. Prints the
    tables; --out writes OUT/stats.json. The folder may be given without --review:
    hf-real3d review-stats REVIEW."""
    PLAIN = "review"  # the option that may be given without its flag
    review: str = help_field("The review folder.")
    out: str | None = help_field("Folder to write stats.json to (never the review folder "
                                 "itself).", default=None)
    annotators: list[str] = help_field("Count only these annotators (default: everyone with "
                                       "a file).", default_factory=list)
    json: bool = help_field("Also print the figures as JSON.", default=False)


@dataclass
class ExportRotationsOptions:
    """Writes the reviewed rotation set in the official release's format
    (rotation_{0,90,180,270}.json with its id scheme, the whole de-biased file, each file with
    the input's header, and review.json with the rule, what was dropped and the review's
    figures), for import-real3dqa; the same files whether --dataset is the release folder or
    its import. An item is kept when every annotator who judged it accepted or corrected it
    (one discard drops it) and their decisions agree (with --min_annotators 2 or more an
    accept beside a correction is a disagreement); a group when every turned viewpoint is.
    A run that keeps no group says why and exits non-zero."""
    dataset: str = help_field("The rotation set the review folder reviews.")
    reviews: str = help_field("The review folder (hf-real3d explore --review or review-init).")
    out: str = help_field("Folder to write the release files to (never an input, nor inside "
                          "one).")
    min_annotators: int = help_field("An item counts as reviewed when at least this many "
                                     "annotators judged it; 0 keeps items nobody judged as the "
                                     "input has them.", default=1)
    annotators: list[str] = help_field("Count only these annotators (default: everyone).",
                                       default_factory=list)
    repairs: str = help_field("reviewed: apply the checker's proposed repairs only where an "
                              "annotator accepted them; all: also apply them to items the "
                              "review leaves unreviewed (source = repaired, stated on the "
                              "card; such a release's scores are not the paper's).",
                              default="reviewed", choices=("reviewed", "all"))
    allow_empty: bool = help_field("Write the release even when no group is kept.",
                                   default=False)


@dataclass
class PublishMetricsOptions:
    """Uploads the metric modules (vrs, circular_eval, flip_eval) as Hub Spaces, so
    evaluate.load("NAMESPACE/vrs") works."""
    namespace: str = help_field("Hub user or organisation that receives the metric Spaces.")
    private: bool = help_field("Create private Spaces.", default=False)
    token: str | None = help_field("Hub token (default: the logged-in one).", default=None)


# --- command bodies: one library call each ------------------------------------------------


def _print_summary(summary: dict) -> None:
    print(f"{'split':<6} {'questions':>9} {'scenes':>6} {'guessable':>9}  "
          "types (what/is/how/can/which/other)")
    for split, s in summary.items():
        t = "/".join(str(v) for v in s["question_types"].values())
        print(f"{split:<6} {s['questions']:>9} {s['scenes']:>6} {s['guessable_share']:>9.1%}  {t}")


def cmd_synth(o: SynthOptions) -> None:
    """``hf-real3d synth``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.synth import build as synth_build

    summary = synth_build.build_benchmark(o.out, o.config(), write_scenes=not o.no_scenes,
                                          workers=o.workers)
    _print_summary(summary)
    print(f"wrote {o.out}")
    if o.json:
        print(json.dumps(summary, indent=2))


def cmd_demo(cfg: Any) -> None:
    """``hf-real3d demo``."""
    # the demo pulls in torch and the training stack: imported only for this command
    from hf_real3d.demo import run_demo

    print(run_demo(cfg).read_text())


def cmd_evaluate(o: EvaluateOptions) -> None:
    """``hf-real3d evaluate``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa import evaluate as r3_eval

    # a one-shot command that builds millions of acyclic objects (parsed prediction rows):
    # the cyclic collector would rescan them again and again
    with no_gc(freeze=True):
        report = r3_eval.evaluate_files(o.dataset, o.predictions, o.out,
                                        leo_compatible=o.reproduce_official,
                                        allow_missing=o.allow_missing, pruned=o.pruned,
                                        exclude_flagged=o.exclude_flagged,
                                        exclude_needs_scene=o.exclude_needs_scene)
    print(report.table)
    for r in report.results:
        for w in r.get("warnings", []):
            print(f"hf-real3d evaluate: warning: {r['model']}: {w}", file=sys.stderr)
        for n in r.get("notices", []):
            print(f"hf-real3d evaluate: note: {r['model']}: {n}", file=sys.stderr)
    print("wrote " + ", ".join(report.files.values()))


def cmd_build_real3dqa(o: BuildReal3DQAOptions) -> None:
    """``hf-real3d build-real3dqa``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa import build as r3_build

    summary = r3_build.build_real3dqa(
        o.sqa3d, o.scenes, o.out, pairs=prediction_pairs(o.full, o.blind),
        judges=named_files(o.judge), split=o.split, n_viewpoints=o.viewpoints,
        push_to_hub=o.push_to_hub, license=o.license,
        allow_judge_failures=o.allow_judge_failures)
    rot = summary["rotation"]
    print(f"{summary['questions']} questions -> {summary['kept']} kept "
          f"({summary['removed']} filtered out)")
    print(f"rotation coverage: {rot['kept']} of {summary['kept']} kept questions rotate "
          f"({rot['kept'] / max(summary['kept'], 1):.1%}); excluded: {rot['reasons']}")
    print(f"wrote {o.out}" + (f", pushed to {summary['url']}" if "url" in summary else ""))


def cmd_import_real3dqa(o: ImportReal3DQAOptions) -> None:
    """``hf-real3d import-real3dqa``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa import build as r3_build

    rep = r3_build.import_release(o.release, o.out, push_to_hub=o.push_to_hub)
    print(json.dumps(rep["rotations"], indent=2))
    if "url" in rep:
        print("pushed to", rep["url"])


def cmd_draw(o: DrawOptions) -> None:
    """``hf-real3d draw``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa import draw as r3_draw

    note = r3_draw.draw_question(o.sqa3d, o.scenes, o.question_id, o.out, split=o.split,
                                 n_viewpoints=o.viewpoints)
    if note:
        print(note)
    print(f"wrote {o.out}")


def cmd_build_3dsrbench(o: Build3DSRBenchOptions) -> None:
    """``hf-real3d build-3dsrbench``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.synth import srbench_build

    summary = srbench_build.build_srbench_folder(
        o.out, SRBenchConfig(seed=o.seed, scenes=o.scenes,
                             questions_per_scene=o.questions_per_scene),
        tsv=o.tsv, workers=o.workers, export_tsv=o.export_tsv, push_to_hub=o.push_to_hub,
        license=o.license)
    print(f"wrote {o.out}: {summary['counts']}")


def cmd_evaluate_3dsrbench(o: Evaluate3DSRBenchOptions) -> None:
    """``hf-real3d evaluate-3dsrbench``."""
    if o.text_only != "none" and o.text_only_folds < 2:
        raise ValueError(f"--text_only_folds {o.text_only_folds}: expected at least 2 (the "
                         "text-only baseline answers each fold with a model of the others)")
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.debias.baseline import text_only_answers
    from hf_real3d.srbench import evaluate as srb_eval

    def text_only(rows):
        try:
            return text_only_answers(rows, diagnostic=o.text_only, folds=o.text_only_folds,
                                     seed=o.seed)
        except ValueError as err:
            raise ValueError(f"{err} (--text_only_folds)") from None

    md = srb_eval.evaluate_dataset(
        o.dataset, o.out, configs=o.configs, predictions=o.predictions, models=o.model,
        rule=o.rule, text_only=None if o.text_only == "none" else text_only,
        text_only_name=f"text-only (stress test, {o.text_only})")
    print(md)


def cmd_check_rotations(o: CheckRotationsOptions) -> None:
    """``hf-real3d check-rotations``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.check_rotations import check_rotations

    if not 0 <= o.margin < 45:
        raise ValueError(f"--margin {o.margin}: expected degrees in [0, 45)")
    s = check_rotations(o.dataset, o.out, scenes=o.scenes, margin_deg=o.margin,
                        write_configs=not o.no_configs)
    v, g = s["verdicts"], s["group_verdicts"]
    print(f"{s['items']} rotated items in {s['groups']} groups: " + ", ".join(
        f"{v[k]} {k} ({g[k]} groups)" for k in ("defect", "needs_scene", "pass")))
    print(f"  (a group takes its worst item's verdict; {s['items_with_several_rules']} items "
          "break more than one rule, so the rule counts overlap)")
    for rule, c in s["rules"].items():
        if c["items"]:
            print(f"  {rule:<22} {c['items']:>5} items ({c['as_defect']} defect, "
                  f"{c['as_needs_scene']} needs_scene) in {c['groups']:>4} groups")
    print(f"wrote {o.out}/check.json, verdicts.jsonl, flags.jsonl, repairs.jsonl, report.md"
          + (f"; configs {', '.join(s['configs'])} in {o.dataset}" if s.get("configs") else ""))


def _print_trial(t: dict[str, Any], command: str) -> bool:
    """Print what --dry_run or --batch_out did; True when the run was one of them."""
    # the prompt's text form only for these two
    from hf_real3d.llm import render_prompt

    if t.get("dry_run"):
        show = t["show"]
        if show:
            name, prompt = show[0]
            print(f"--- {name} (the whole prompt) ---\n{render_prompt(prompt)}")
            for name, prompt in show[1:20]:
                last = prompt[-1]["content"] if isinstance(prompt, list) else prompt
                print(f"--- {name} (its last turn) ---\n{last}")
            if len(show) > 20:
                print(f"... and {len(show) - 20} more (--batch_out FILE writes them all)")
        print(f"dry run: {t['prompts']} prompts, {t['cached']} answered from the cache, "
              f"{t['requests']} request(s) would be sent; none sent, nothing written")
        return True
    if "batch_out" in t:
        print(f"wrote {t['requests']} request(s) to {t['batch_out']} ({t['cached']} of "
              f"{t['prompts']} prompts answered from the cache); run them, e.g. vllm run-batch "
              f"-i {t['batch_out']} -o results.jsonl --model MODEL, then: hf-real3d {command} "
              "... --batch_in results.jsonl")
        return True
    return False


def cmd_judge(o: JudgeOptions) -> None:
    """``hf-real3d judge``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.judge import run_judge

    client = o.client()
    m = run_judge(o.dataset, o.out, client, template=o.prompt, split=o.split,
                  **o.run_options())
    if _print_trial(m, "judge"):
        return
    u = m["usage"]
    print(f"{m['questions']} questions judged by {m['judge']['model']}: {m['answered']} "
          f"answered, {m['failed']} failed, {m['cached']} from the cache; "
          f"{client.stats.requests} request(s) sent; tokens {u['prompt_tokens']} prompt, "
          f"{u['completion_tokens']} completion; finish reasons {u['finish_reasons']}")
    for f in m["failures"][:5]:
        print(f"  failed: question_id {f['question_id']}: {f['reason']}", file=sys.stderr)
    if m["failed"] > 0.1 * m["questions"]:
        print(f"hf-real3d judge: warning: {m['failed']} of {m['questions']} questions failed; "
              "build-real3dqa --judge refuses a file with more than a tenth failed: run the "
              "same command again (answered questions come from the cache)", file=sys.stderr)
    print(f"wrote {o.out}; use it with build-real3dqa --judge NAME={o.out}")


def cmd_rotate(o: RotateOptions) -> None:
    """``hf-real3d rotate``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.rewrite import rotate_dataset

    client = o.client()
    s = rotate_dataset(o.dataset, o.out, client, scenes=o.scenes, template=o.prompt,
                       split=o.split, n_viewpoints=o.viewpoints, **o.run_options())
    if _print_trial(s, "rotate"):
        print(f"  ({s['questions']} questions: {s['geometry_groups']} turned from geometry, "
              f"{s['no_heading_cue']} with no heading cue)")
        return
    u = s["usage"]
    print(f"{s['questions']} questions -> {s['groups']} rotation groups ({s['sources']}); "
          f"{s['asked']} prompts, {s['cached']} cached, {s['requests']} request(s) sent, "
          f"{s['failed']} failed; {s['excluded']} turned items excluded: {s['reasons']}")
    print(f"  no heading cue: {s['no_heading_cue']} questions; structured output: "
          f"{s['structured']}; tokens {u['prompt_tokens']} prompt, {u['completion_tokens']} "
          f"completion; finish reasons {u['finish_reasons']}")
    if s["check"]:
        c = s["check"]
        v, g = c.get("verdicts") or {}, c.get("group_verdicts") or {}
        print(f"check-rotations: of {c['items']} turned items "
              + ", ".join(f"{n} {k}" for k, n in v.items())
              + f"; {g.get('pass', 0)} groups pass (review them: hf-real3d explore --dataset "
              f"{o.out} --review REVIEW_FOLDER)")
    print(f"wrote {o.out}")


def cmd_review_init(o: ReviewInitOptions) -> None:
    """``hf-real3d review-init``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.review import ReviewFolder

    if (Path(o.review) / "review.json").is_file():
        raise FileExistsError(f"{o.review}: already a review folder (review.json); annotators "
                              "resume it as it is, or give a new folder")
    rf = ReviewFolder(o.review, o.dataset, scenes=o.scenes, checks=o.checks,
                      repeat_share=o.repeat, repeat_gap=o.gap, seed=o.seed)
    verdicts: dict[str, int] = {}
    for v in rf.checks.values():
        verdicts[v["verdict"]] = verdicts.get(v["verdict"], 0) + 1
    n_prop = sum(len(p) for p in rf.proposals.values())
    print(f"review folder {o.review}: {len(rf.order)} rotated items of {rf.meta['dataset']} "
          f"({', '.join(f'{n} {v}' for v, n in sorted(verdicts.items()))}; {n_prop} proposed "
          f"repairs), each shown once and {rf.meta['repeat_share']:g} of them a second time; "
          f"suggestions from {rf.meta['checks']}")
    print(f"judge: hf-real3d explore --dataset {o.dataset} --review {o.review}, or "
          f"hf-real3d review-import {o.review} --annotator NAME --from FILE")


def cmd_review_import(o: ReviewImportOptions) -> None:
    """``hf-real3d review-import``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.review import import_decisions

    r = import_decisions(o.review, o.annotator, o.from_file, revise=o.revise)
    print(f"appended {r['imported']} decisions of {r['annotator']} to {r['file']}: "
          f"{r['decisions']} ({r['revisions']} supersede earlier ones)")


def cmd_review_stats(o: ReviewStatsOptions) -> None:
    """``hf-real3d review-stats``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d._io import write_json
    from hf_real3d.real3dqa.review import review_stats, stats_markdown

    s = review_stats(o.review, o.annotators or None)
    print(stats_markdown(s))
    k, c = s["kappa"], s["self_consistency"]
    print(f"pooled: kappa n = {k['items']} items in {k['pairs']} pair(s), self-consistency "
          f"n = {c['repeats']} repeats")
    if o.out:
        write_json(Path(o.out) / "stats.json", s, indent=2)
        print(f"wrote {o.out}/stats.json")
    if o.json:
        print(json.dumps(s, indent=2))


def cmd_export_rotations(o: ExportRotationsOptions) -> None:
    """``hf-real3d export-rotations``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa.review import export_rotations

    s = export_rotations(o.dataset, o.reviews, o.out, min_annotators=o.min_annotators,
                         annotators=o.annotators or None, repairs=o.repairs,
                         allow_empty=o.allow_empty)
    print(f"{s['exported']} of {s['groups']} rotation groups exported; items: {s['items']}; "
          f"de-biased set: {s['debiased']['questions']} questions ({s['debiased']['from']})")
    if s["repaired"]:
        print(f"note: {s['note']}")
    print(f"wrote {o.out} (rotation_{{0,90,180,270}}.json, the de-biased file, review.json); "
          f"read it with hf-real3d import-real3dqa --release {o.out} --out DIR")


def cmd_publish_metrics(o: PublishMetricsOptions) -> None:
    """``hf-real3d publish-metrics``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d import hub

    for url in hub.publish_metrics(o.namespace, private=o.private, token=o.token):
        print(url)


# --- dispatch ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One ``hf-real3d`` command: its one-line help, its options dataclass (a callable, so heavy
    options load lazily) and the function that runs it."""
    help: str
    options: Callable[[], type]  # the options dataclass (a callable so demo imports lazily)
    run: Callable[[Any], None]


@dataclass
class ExploreOptions:
    """A local web app (Gradio) over folders this library writes: questions with their four
    viewpoints and 3D scene, models' answers and flips, a leaderboard of results folders and
    3DSRBench items. Serves on 127.0.0.1 only, unless --host or --share says otherwise."""
    dataset: str | None = help_field("A Real-3DQA folder (build-real3dqa, import-real3dqa or "
                                     "synth).", default=None)
    predictions: list[str] = help_field(
        "Models' answers on --dataset, NAME=FILE[,FILE...] as `hf-real3d evaluate` takes them.",
        default_factory=list)
    results: list[str] = help_field("Folders with metrics.json from `hf-real3d evaluate` or "
                                    "`evaluate-3dsrbench` (the leaderboard).",
                                    default_factory=list)
    srbench: str | None = help_field("A 3DSRBench folder (build-3dsrbench).", default=None)
    srbench_predictions: list[str] = help_field(
        "Models' answers on --srbench, NAME=FILE as `evaluate-3dsrbench` takes them.",
        default_factory=list)
    host: str = help_field("Address to bind; anything but 127.0.0.1 exposes the app to your "
                           "network.", default="127.0.0.1")
    port: int | None = help_field("Port (default: Gradio's, 7860 or the next free one).",
                                  default=None)
    share: bool = help_field("Also open a public Gradio share link (off unless asked).",
                             default=False)
    review: str | None = help_field("A review folder: adds the Review tab, where annotators "
                                    "accept, correct or discard the rotated items of --dataset "
                                    "(any rotation set check-rotations reads; a new folder is "
                                    "started for it, an existing one resumes).", default=None)
    scenes: str | None = help_field("With --review: ScanNet-format scenes for the checker's "
                                    "scene rules.", default=None)
    review_repeat: float | None = help_field("With a new --review folder: share of items shown "
                                             "a second time, unannounced (default 0.1).",
                                             default=None)
    review_gap: int | None = help_field("With a new --review folder: how many items later a "
                                        "repeated item comes back (default 10).", default=None)
    review_seed: int | None = help_field("With a new --review folder: seed of the repeats "
                                         "(default 0).", default=None)


@dataclass
class LmmsTasksOptions:
    """Writes lmms-eval task YAMLs (and their utils.py) that read your built datasets and
    score with this library's metrics; run them with `lmms-eval --include_path OUT --tasks
    hf_real3d_real3dqa,hf_real3d_3dsrbench_real ...`."""
    out: str = help_field("Folder for the task YAMLs and utils.py (replaced if present).")
    real3dqa: str | None = help_field("Real-3DQA dataset: a folder built by build-real3dqa / "
                                      "import-real3dqa, or a Hub id.", default=None)
    srbench: str | None = help_field("3DSRBench dataset: a folder built by build-3dsrbench, or "
                                     "a Hub id.", default=None)
    real_scanqa: str | None = help_field("Real-ScanQA dataset: a folder built by "
                                         "build-real-scanqa, or a Hub id.", default=None)
    max_new_tokens: int = help_field("Generation length asked of the model.", default=16)


def cmd_build_real_scanqa(o: BuildRealScanQAOptions) -> None:
    """``hf-real3d build-real-scanqa``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real_scanqa import build_real_scanqa

    path = Path(o.scanqa)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if len(files) != 1:
            raise FileNotFoundError(f"{path}: expected one ScanQA JSON file, found "
                                    f"{[f.name for f in files]}")
        path = files[0]
    s = build_real_scanqa(path, o.out, pairs=prediction_pairs(o.full, o.blind),
                          judges=named_files(o.judge), push_to_hub=o.push_to_hub,
                          license=o.license, allow_judge_failures=o.allow_judge_failures)
    print(f"wrote {o.out}: {s['questions']} questions, {s['kept']} kept, {s['removed']} "
          "removed" + (f"; {s['url']}" if s.get("url") else ""))


def cmd_evaluate_real_scanqa(o: EvaluateRealScanQAOptions) -> None:
    """``hf-real3d evaluate-real-scanqa``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real_scanqa import evaluate_real_scanqa

    res = evaluate_real_scanqa(o.dataset, o.predictions, o.out,
                               leo_compatible=o.reproduce_official, captions=not o.no_captions)
    for r in res:
        print(r["model"], {c: round(r[c]["em_refined"], 1) for c in r if c != "model"})
    print(f"wrote {o.out}/metrics.json, {o.out}/report.md")


def cmd_render_views(o: RenderViewsOptions) -> None:
    """``hf-real3d render-views``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.views import add_views_config

    counts = add_views_config(o.dataset, size=o.size)
    print(f"wrote config views to {o.dataset}: " + ", ".join(f"{k} {v}" for k, v in
                                                             counts.items()))


def cmd_stress_test(o: StressTestOptions) -> None:
    """``hf-real3d stress-test``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.debias.run import run_stress_test

    s = run_stress_test(o.dataset, o.out, config=o.config, split=o.split,
                        question_columns=o.question_column or None,
                        answer_column=o.answer_column, group_by=o.group_by,
                        type_column=o.type_column, exclude=o.exclude, diagnostic=o.diagnostic,
                        folds=o.folds, seed=o.seed, do_prune=o.prune,
                        round_fraction=o.round_fraction, margin=o.margin, budget=o.budget,
                        lm_path=o.lm_path, lm_epochs=o.lm_epochs,
                        type_as_feature=o.type_as_feature, id_column=o.id_column)
    sv = s["solvability"]
    if s.get("note"):
        print(f"note: {s['note']}", file=sys.stderr)
    print(f"non-visual solvability {sv['overall']:.1f}% [{sv['ci'][0]:.1f}, {sv['ci'][1]:.1f}] "
          f"(majority {s['majority']:.1f}, chance {s['chance']:.1f}, n {s['n']})")
    if "final" in s:
        print(f"after pruning: {s['final']['kept']} kept, solvability "
              f"{s['final']['solvability']:.1f}")
    print(f"wrote {o.out}/stress_test.json, scores.jsonl, stress_test.png, report.md")


def cmd_lmms_tasks(o: LmmsTasksOptions) -> None:
    """``hf-real3d lmms-tasks``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.lmms import write_lmms_tasks

    names = write_lmms_tasks(o.out, real3dqa=o.real3dqa, srbench=o.srbench,
                             real_scanqa=o.real_scanqa,
                             max_new_tokens=o.max_new_tokens)
    print(f"wrote {len(names)} lmms-eval task(s) to {o.out}: {', '.join(names)}")
    print(f"run: lmms-eval --model MODEL --model_args ... --include_path {o.out} "
          f"--tasks {','.join(names)}")


def cmd_explore(o: ExploreOptions) -> None:
    """``hf-real3d explore``."""
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.app import ExplorerData, build_app, launch

    data = ExplorerData.load(o.dataset, o.predictions, o.results, o.srbench,
                             o.srbench_predictions, review=o.review, scenes=o.scenes,
                             review_settings={"repeat_share": o.review_repeat,
                                              "repeat_gap": o.review_gap,
                                              "seed": o.review_seed})
    print(f"loaded in {data.load_s:.1f} s; serving on http://{o.host}:{o.port or 'PORT'} "
          "(Ctrl-C stops)", flush=True)
    launch(build_app(data=data), host=o.host, port=o.port, share=o.share)


def _demo_config() -> type:
    # the demo pulls in torch and the training stack: imported only for this command
    from hf_real3d.demo import DemoConfig

    return DemoConfig


COMMANDS: dict[str, Command] = {
    "synth": Command("generate the embedded synthetic benchmark (dataset folder + SQA3D "
                     "files + ScanNet scenes)", lambda: SynthOptions, cmd_synth),
    "demo": Command("run the main job on the embedded benchmark", _demo_config, cmd_demo),
    "evaluate": Command("score Real-3DQA predictions: EM, refined EM, P_k, VRS",
                        lambda: EvaluateOptions, cmd_evaluate),
    "build-real3dqa": Command("filter + rotate SQA3D-format data into Real-3DQA",
                              lambda: BuildReal3DQAOptions, cmd_build_real3dqa),
    "import-real3dqa": Command("the official Real-3DQA release as a dataset folder",
                               lambda: ImportReal3DQAOptions, cmd_import_real3dqa),
    "draw": Command("top-down PNG of a question from each viewpoint", lambda: DrawOptions,
                    cmd_draw),
    "build-real-scanqa": Command("filter ScanQA into Real-ScanQA (no rotation)",
                                 lambda: BuildRealScanQAOptions, cmd_build_real_scanqa),
    "evaluate-real-scanqa": Command("score Real-ScanQA predictions: EM, refined EM, BLEU, "
                                    "ROUGE-L, METEOR, CIDEr",
                                    lambda: EvaluateRealScanQAOptions,
                                    cmd_evaluate_real_scanqa),
    "render-views": Command("add rendered views (BEV + egocentric frames) for VLMs",
                            lambda: RenderViewsOptions, cmd_render_views),
    "build-3dsrbench": Command("3DSRBench dataset: official TSV and/or synthetic renders",
                               lambda: Build3DSRBenchOptions, cmd_build_3dsrbench),
    "evaluate-3dsrbench": Command("3DSRBench: vanilla/circular/flip accuracy + baselines",
                                  lambda: Evaluate3DSRBenchOptions, cmd_evaluate_3dsrbench),
    "explore": Command("browse questions, viewpoints, scenes, answers and a leaderboard in a "
                       "local web app", lambda: ExploreOptions, cmd_explore),
    "stress-test": Command("is a test set text-solvable? k-fold text-only diagnostic; --prune",
                           lambda: StressTestOptions, cmd_stress_test),
    "check-rotations": Command("check every rotated item against its turn (text and scene "
                               "rules)", lambda: CheckRotationsOptions, cmd_check_rotations),
    "judge": Command("the text-only filter: a language model answers from the text alone",
                     lambda: JudgeOptions, cmd_judge),
    "rotate": Command("each question from every turned viewpoint (geometry, else a language "
                      "model), checked", lambda: RotateOptions, cmd_rotate),
    "review-init": Command("prepare a review folder without a browser",
                           lambda: ReviewInitOptions, cmd_review_init),
    "review-import": Command("append an annotator's decisions made elsewhere (CSV or JSONL)",
                             lambda: ReviewImportOptions, cmd_review_import),
    "review-stats": Command("agreement of a rotation review: kappa, self-consistency, checker",
                            lambda: ReviewStatsOptions, cmd_review_stats),
    "export-rotations": Command("the reviewed rotations in the release's format",
                                lambda: ExportRotationsOptions, cmd_export_rotations),
    "lmms-tasks": Command("lmms-eval task YAMLs for your built datasets",
                          lambda: LmmsTasksOptions, cmd_lmms_tasks),
    "publish-metrics": Command("upload the metric modules as Hub Spaces",
                               lambda: PublishMetricsOptions, cmd_publish_metrics),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: hf-real3d COMMAND [--debug] [options]", "",
             "Honest 3D spatial-reasoning evaluation and training (Real-3DQA, 3DSRBench, 3DR-FT).",
             "", "commands:"]
    lines += [f"  {name:<{width}}  {cmd.help}" for name, cmd in COMMANDS.items()]
    lines += ["", "`hf-real3d COMMAND --help` lists a command's options."]
    return "\n".join(lines)


def _on_sigterm(signum, frame):  # pragma: no cover - exercised through a subprocess
    request_stop(Terminated)


def _on_sigint(signum, frame):  # pragma: no cover - exercised through a subprocess
    request_stop(KeyboardInterrupt)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter,
                     argparse.ArgumentDefaultsHelpFormatter):
    """The description as written, and each option's default after its help."""


def parse(argv: Sequence[str]) -> tuple[str, Any]:
    """(command name, its options object) from ``argv`` (without the program name)."""
    name, rest = argv[0], list(argv[1:])
    if name not in COMMANDS:
        near = difflib.get_close_matches(name, list(COMMANDS), n=1)
        raise ValueError(f"unknown command {name!r}" + (f"; did you mean {near[0]!r}?" if near
                                                         else f"; one of {list(COMMANDS)}"))
    cmd = COMMANDS[name]
    options_cls = cmd.options()
    plain = getattr(options_cls, "PLAIN", None)
    if plain and rest and not rest[0].startswith("-"):  # `CMD VALUE` for `CMD --plain VALUE`
        rest = [f"--{plain}", *rest]
    doc = options_cls.__doc__ if options_cls.__doc__ and not options_cls.__doc__.startswith(
        options_cls.__name__ + "(") else ""
    parser = DataclassParser(options_cls, prog=f"hf-real3d {name}",
                             description=textwrap.fill(f"{cmd.help}. {' '.join(doc.split())}",
                                                       88),
                             formatter_class=_HelpFormatter)
    return name, parser.parse_into_dataclass(rest)


# options that are not inputs: what is written, and the language model's reply cache
_NOT_INPUTS = frozenset({"out", "llm_cache", "push_to_hub", "host", "llm_url", "namespace"})
# commands whose --out is one file (only an input of the same path is refused)
_FILE_OUT = frozenset({"draw"})


def _input_paths(options: Any) -> list[tuple[str, Path]]:
    """(option, path) of every option value that names an existing file or folder."""
    out = []
    for f in dataclasses.fields(options):
        if f.name in _NOT_INPUTS:
            continue
        value = getattr(options, f.name)
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if not isinstance(v, str | os.PathLike) or not str(v):
                continue
            # NAME=FILE[,FILE...] names files after the "="
            parts = str(v).split("=", 1)[-1].split(",") if "=" in str(v) else [str(v)]
            out += [(f.name, Path(x)) for x in parts if x and Path(x).exists()]
    return out


def refuse_out_in_inputs(name: str, options: Any) -> None:
    """``--out`` is never an input, never inside one, and never holds one: checked before any
    work, for every command that writes (:func:`hf_real3d._io.check_out`)."""
    # the library's modules load per command; _io only once a command is chosen
    from hf_real3d._io import check_out

    out = getattr(options, "out", None)
    if not out:
        return
    for option, path in _input_paths(options):
        check_out(out, prefix="--", one_file=name in _FILE_OUT, **{option: path})


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hf-real3d`` with ``argv``; returns the exit code (2 for an input error, one line on
    stderr; 130 / 143 for Ctrl-C / SIGTERM)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    # a parent may have blocked these (the mask is inherited across exec): the exit codes
    # 130/143 and the clean-up are promised whatever started us
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    clear_stop()
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    previous_int = signal.signal(signal.SIGINT, _on_sigint)
    name = argv[0]
    try:
        name, options = parse(argv)
        refuse_out_in_inputs(name, options)
        COMMANDS[name].run(options)
        check_stop()  # a signal whose exception a finaliser swallowed
        return 0
    except KeyboardInterrupt:
        print(f"hf-real3d {name}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"hf-real3d {name}: terminated", file=sys.stderr)
        return 143
    except (ValueError, TypeError, OSError, KeyError, ImportError) as err:
        if debug:
            traceback.print_exc()
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        if isinstance(err, ImportError):
            # a missing optional package: the message names the extra that installs it
            from hf_real3d._extras import missing_extra_message

            msg = missing_extra_message(err)
        print(f"hf-real3d {name}: error: {msg}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


if __name__ == "__main__":
    sys.exit(main())
