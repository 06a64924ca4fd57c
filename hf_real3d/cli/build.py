"""``hf-real3d synth``, ``build-real3dqa``, ``import-real3dqa``, ``draw``, ``build-real-scanqa``,
``render-views``, ``build-3dsrbench``, ``lmms-tasks`` and ``publish-metrics``: the commands that
build, import and publish."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from hf_real3d._fields import help_field
from hf_real3d.specs import named_files, prediction_pairs
from hf_real3d.synth.config import SRBenchConfig, SynthConfig

_SYNTH = SynthConfig()  # the one definition of the synthetic benchmark's default sizes


def _push_to_hub() -> Any:
    return help_field("Also publish the folder as this dataset repo (ORG/NAME).", default=None)


@dataclass(kw_only=True)
class _Publishing:
    """The options of a command that writes a dataset folder and may publish it."""
    license: str = help_field("License identifier for the dataset card; it depends on your data "
                         "(SQA3D is apache-2.0, ScanNet scans follow the ScanNet Terms of Use, "
                         "3DSRBench is cc-by-4.0).", default="other")
    push_to_hub: str | None = _push_to_hub()


@dataclass
class _SQA3DInputs:
    """The options of a command that reads SQA3D files and their scenes."""
    sqa3d: str = help_field("Folder with SQA3D question/annotation files.")
    scenes: str = help_field("Folder of ScanNet-format scene folders.")


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


def cmd_synth(o: SynthOptions) -> None:
    """``hf-real3d synth``."""
    from hf_real3d.synth import build as synth_build

    run = synth_build.build_benchmark(o.out, o.config(), write_scenes=not o.no_scenes,
                                      workers=o.workers)
    print("\n".join(run.lines(o.out)))
    if o.json:
        print(json.dumps(run.splits, indent=2))


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


def cmd_build_real3dqa(o: BuildReal3DQAOptions) -> None:
    """``hf-real3d build-real3dqa``."""
    from hf_real3d.real3dqa import build as r3_build

    run = r3_build.build_real3dqa(
        o.sqa3d, o.scenes, o.out, pairs=prediction_pairs(o.full, o.blind),
        judges=named_files(o.judge), split=o.split, n_viewpoints=o.viewpoints,
        license=o.license, allow_judge_failures=o.allow_judge_failures)
    url = None
    if o.push_to_hub:
        # the Hub client only to publish
        from hf_real3d.hub import push_folder

        url = push_folder(o.out, o.push_to_hub)
    print("\n".join(run.lines(o.out, url)))


@dataclass
class ImportReal3DQAOptions:
    """Imports the official Real-3DQA release files as a dataset folder (configs real3dqa,
    rotations and, with SQA3D's test files, sqa3d: the texts check-rotations reads as evidence),
    with the importer's quality flags."""
    release: str = help_field("Folder with the official Real-3DQA release files.")
    out: str = help_field("Dataset folder to write.")
    push_to_hub: str | None = _push_to_hub()
    sqa3d: str | None = help_field("SQA3D's folder (v1_balanced_*_test_scannetv2.json), whose "
                                   "questions of the release's scenes the import keeps for "
                                   "check-rotations; default: an sqa3d folder beside the "
                                   "release, when there is one.", default=None)


def cmd_import_real3dqa(o: ImportReal3DQAOptions) -> None:
    """``hf-real3d import-real3dqa``."""
    from hf_real3d.real3dqa import build as r3_build

    run = r3_build.import_release(o.release, o.out, push_to_hub=o.push_to_hub, sqa3d=o.sqa3d)
    if run.sqa3d is None:
        print("no SQA3D test files given (--sqa3d) or beside the release: the import keeps no "
              "SQA3D texts, so check-rotations of it runs without the evidence at each pose "
              "unless given --sqa3d", file=sys.stderr)
    print("\n".join(run.lines()))


@dataclass
class DrawOptions(_SQA3DInputs):
    """Draws a question top-down from each of its viewpoints (PNG), with the agent, the objects and
    the answer."""
    question_id: int = help_field("The question to draw.")
    out: str = help_field("PNG file to write.")
    split: str = help_field("SQA3D split holding the question.", default="test")
    viewpoints: int = help_field("Viewpoints to draw.", default=4)


def cmd_draw(o: DrawOptions) -> None:
    """``hf-real3d draw``."""
    from hf_real3d.real3dqa import draw as r3_draw

    note = r3_draw.draw_question(o.sqa3d, o.scenes, o.question_id, o.out, split=o.split,
                                 n_viewpoints=o.viewpoints)
    if note:
        print(note)
    print(f"wrote {o.out}")


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


def cmd_build_real_scanqa(o: BuildRealScanQAOptions) -> None:
    """``hf-real3d build-real-scanqa``."""
    from hf_real3d.real_scanqa import build_real_scanqa
    from hf_real3d.sources import ScanQAFile, resolve

    path = resolve(o.scanqa, ScanQAFile, what="`scanqa`").path
    run = build_real_scanqa(path, o.out, pairs=prediction_pairs(o.full, o.blind),
                            judges=named_files(o.judge), push_to_hub=o.push_to_hub,
                            license=o.license, allow_judge_failures=o.allow_judge_failures)
    print("\n".join(run.lines(o.out)))


@dataclass
class RenderViewsOptions:
    """Adds the `views` config (a BEV with numbered objects + the agent's egocentric frame
    per question and viewpoint) to a dataset folder with scenes, for VLM-based 3D-LLMs."""
    dataset: str = help_field("Dataset folder with a `scenes` config (hf-real3d synth, "
                              "build-real3dqa).")
    size: int = help_field("Image side in pixels.", default=128)


def cmd_render_views(o: RenderViewsOptions) -> None:
    """``hf-real3d render-views``."""
    from hf_real3d.views import add_views_config

    counts = add_views_config(o.dataset, size=o.size)
    print(f"wrote config views to {o.dataset}: " + ", ".join(f"{k} {v}" for k, v in
                                                             counts.items()))


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


def cmd_build_3dsrbench(o: Build3DSRBenchOptions) -> None:
    """``hf-real3d build-3dsrbench``."""
    from hf_real3d.synth import srbench_build

    run = srbench_build.build_srbench_folder(
        o.out, SRBenchConfig(seed=o.seed, scenes=o.scenes,
                             questions_per_scene=o.questions_per_scene),
        tsv=o.tsv, workers=o.workers, export_tsv=o.export_tsv, push_to_hub=o.push_to_hub,
        license=o.license)
    print("\n".join(run.lines(o.out)))


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


def cmd_lmms_tasks(o: LmmsTasksOptions) -> None:
    """``hf-real3d lmms-tasks``."""
    from hf_real3d.lmms import write_lmms_tasks

    names = write_lmms_tasks(o.out, real3dqa=o.real3dqa, srbench=o.srbench,
                             real_scanqa=o.real_scanqa,
                             max_new_tokens=o.max_new_tokens)
    print(f"wrote {len(names)} lmms-eval task(s) to {o.out}: {', '.join(names)}")
    print(f"run: lmms-eval --model MODEL --model_args ... --include_path {o.out} "
          f"--tasks {','.join(names)}")


@dataclass
class PublishMetricsOptions:
    """Uploads the metric modules (vrs, circular_eval, flip_eval) as Hub Spaces, so
    evaluate.load("NAMESPACE/vrs") works."""
    namespace: str = help_field("Hub user or organisation that receives the metric Spaces.")
    private: bool = help_field("Create private Spaces.", default=False)
    token: str | None = help_field("Hub token (default: the logged-in one).", default=None)


def cmd_publish_metrics(o: PublishMetricsOptions) -> None:
    """``hf-real3d publish-metrics``."""
    from hf_real3d.metric_base import publish_metrics

    for url in publish_metrics(o.namespace, private=o.private, token=o.token):
        print(url)
