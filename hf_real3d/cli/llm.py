"""``hf-real3d judge`` and ``rotate``: the language-model steps, and the options they share."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from hf_real3d._fields import help_field
from hf_real3d.geometry import MARGIN_DEG
from hf_real3d.llm import LLMClient, LLMConfig


@dataclass(kw_only=True)
class _LLMOptions(LLMConfig):
    """The model a language-model step asks (a server, a local folder or Batch API files: the
    client's own settings, :class:`hf_real3d.llm.config.LLMConfig`, which checks them), and
    what a run tries before spending (--dry_run, --limit)."""
    limit: int | None = help_field("Only N questions, drawn with --seed (try a prompt or a "
                                   "server before the whole run).", default=None)
    dry_run: bool = help_field("Print the prompts that would be sent and how many requests, "
                               "and send none (the server is not contacted; nothing is "
                               "written).", default=False)

    def client(self) -> LLMClient:
        """The client of these settings, every one checked before any work."""
        if self.dry_run and (self.batch_in or self.batch_out):
            raise ValueError("`dry_run` with `batch_out` or `batch_in`: a dry run writes and "
                             "reads nothing; drop one")
        return LLMClient(self)


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
    margin: float = help_field("Degrees by which an object may lie outside the direction a "
                               "text gives it and still pass the checker's scene rules (as "
                               "check-rotations --margin).", default=MARGIN_DEG)


def cmd_judge(o: JudgeOptions) -> None:
    """``hf-real3d judge``."""
    from hf_real3d.real3dqa.judge import run_judge
    from hf_real3d.real3dqa.runs import Trial

    client = o.client()
    run = run_judge(o.dataset, o.out, client, template=o.prompt, split=o.split, limit=o.limit,
                    dry_run=o.dry_run)
    if isinstance(run, Trial):
        print("\n".join(run.lines("judge")))
        return
    print("\n".join(run.lines(o.out, client.stats.requests)))
    for line in run.warnings(bool(o.batch_in)):
        print(line, file=sys.stderr)


def cmd_rotate(o: RotateOptions) -> None:
    """``hf-real3d rotate``."""
    from hf_real3d.real3dqa.checker.check import CheckOptions
    from hf_real3d.real3dqa.rotate import rotate_dataset
    from hf_real3d.real3dqa.runs import Trial

    check = CheckOptions(o.margin)  # refused before the client starts
    client = o.client()
    run = rotate_dataset(o.dataset, o.out, client, scenes=o.scenes, template=o.prompt,
                         split=o.split, n_viewpoints=o.viewpoints, limit=o.limit,
                         dry_run=o.dry_run, check=check)
    print("\n".join(run.lines("rotate") if isinstance(run, Trial) else run.lines(o.out)))
