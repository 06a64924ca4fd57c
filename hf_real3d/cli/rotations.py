"""``hf-real3d check-rotations``, ``correct-rotations``, ``review-init``, ``review-import``,
``review-stats`` and ``export-rotations``: checking, correcting and reviewing rotations."""

from __future__ import annotations

import collections
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hf_real3d._fields import help_field
from hf_real3d.errors import as_flags
from hf_real3d.geometry import MARGIN_DEG


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
                               "text gives it and still pass the scene rules.", default=MARGIN_DEG)
    no_configs: bool = help_field("Do not add the rotation_checks / rotations_checked configs "
                                  "to a dataset folder.", default=False)
    sqa3d: str | None = help_field("SQA3D's folder (v1_balanced_*_test_scannetv2.json): the "
                                   "other questions asked at each item's pose are evidence of "
                                   "where things are; default: an sqa3d folder beside the "
                                   "dataset, when there is one.", default=None)
    no_pose_evidence: bool = help_field("Do not read the other questions at each pose, even "
                                        "when SQA3D's files are found.", default=False)


def cmd_check_rotations(o: CheckRotationsOptions) -> None:
    """``hf-real3d check-rotations``."""
    from hf_real3d.real3dqa.checker.run import check_rotations
    from hf_real3d.real3dqa.runs import CheckRun

    s = check_rotations(o.dataset, o.out, scenes=o.scenes, margin_deg=o.margin,
                        write_configs=not o.no_configs, sqa3d=o.sqa3d,
                        pose_evidence=not o.no_pose_evidence)
    if s.get("evidence_missing"):
        print(as_flags(s["evidence_missing"], ("sqa3d",)), file=sys.stderr)
    # check_rotations returns check.json's summary as a dict, typed here
    print("\n".join(CheckRun.of(s).lines(o.dataset, o.out)))


@dataclass
class CorrectRotationsOptions:
    """Writes a corrected rotation set a lab can score on, in the release's format: each turned
    item kept as released where check-rotations calls it pass, else derived from viewpoint 0
    by its turn (the situation's egocentric phrases turned; a heading-free answer kept, a
    direction answer turned, a thing in a direction where viewpoint 0's texts at the pose
    place it alone), else dropped with the reason; a group kept whole or not at all. Writes
    OUT/rotation_{0,90,180,270}.json, the de-biased file, corrections.jsonl (every turned item:
    source, rule, evidence, reason), correction.json and README.md. Not the paper's set."""
    dataset: str = help_field("The release folder, or its import-real3dqa folder.")
    out: str = help_field("Folder to write the corrected set to (never an input).")
    sqa3d: str | None = help_field("SQA3D's folder (v1_balanced_*_test_scannetv2.json): the other "
                                   "questions at each pose are evidence; default: the folder's "
                                   "SQA3D texts, or an sqa3d folder beside the dataset.",
                                   default=None)
    scenes: str | None = help_field("Folder of ScanNet-format scenes: questions whose meaning "
                                    "the geometry route knows are derived from the scene, as "
                                    "rotate derives them; default: the dataset folder's scenes "
                                    "config, if any.", default=None)


def cmd_correct_rotations(o: CorrectRotationsOptions) -> None:
    """``hf-real3d correct-rotations``."""
    from hf_real3d.real3dqa.correct import correct_rotations

    s = correct_rotations(o.dataset, o.out, sqa3d=o.sqa3d, scenes=o.scenes)
    if s.evidence is None:
        print("checked without SQA3D's texts (none given with --sqa3d, in the folder or beside "
              "it): fewer answers can be derived", file=sys.stderr)
    print("\n".join(s.lines()))


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
    repeat: float | None = help_field("Share of the groups shown a second time, whole and "
                                      "unannounced (default 0.1).", default=None)
    gap: int | None = help_field("At least how many showings after its first look a second "
                                 "look comes (default 50; the distance beyond it is drawn).",
                                 default=None)
    seed: int | None = help_field("Seed of the order and of the second looks (default 0).",
                                  default=None)


def cmd_review_init(o: ReviewInitOptions) -> None:
    """``hf-real3d review-init``."""
    from hf_real3d.real3dqa.review import ReviewFolder, gap_cost

    rf = ReviewFolder.create(o.review, o.dataset, scenes=o.scenes, checks=o.checks,
                             repeat_share=o.repeat, repeat_gap=o.gap, seed=o.seed)
    verdicts = collections.Counter(v["verdict"] for v in rf.checks.values())
    n_prop = sum(len(p) for p in rf.proposals.values())
    again = len(rf.queue("annotator")) - len(rf.order)
    print(f"review folder {o.review}: {len(rf.order)} rotated items of {rf.meta['dataset']} "
          f"({', '.join(f'{n} {v}' for v, n in sorted(verdicts.items()))}; {n_prop} proposed "
          f"repairs), each shown once, and {rf.meta['repeat_share']:g} of the groups again "
          f"(about {again:,} second looks a queue) at least {rf.meta['repeat_gap']} showings "
          f"later; suggestions from {rf.meta['checks']}")
    if cost := gap_cost(rf.meta["repeat_gap"]):
        print(cost)
    print(f"judge: hf-real3d explore --dataset {o.dataset} --review {o.review}, or "
          f"hf-real3d review-import {o.review} --annotator NAME --from FILE")


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


def cmd_review_import(o: ReviewImportOptions) -> None:
    """``hf-real3d review-import``."""
    from hf_real3d.real3dqa.review import import_decisions

    r = import_decisions(o.review, o.annotator, o.from_file, revise=o.revise)
    print(f"appended {r['imported']} decisions of {r['annotator']} to {r['file']}: "
          f"{r['decisions']} ({r['revisions']} supersede earlier ones)")


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


def cmd_review_stats(o: ReviewStatsOptions) -> None:
    """``hf-real3d review-stats``."""
    from hf_real3d._io import write_json
    from hf_real3d.real3dqa.review import review_stats, stats_markdown

    s = review_stats(o.review, o.annotators or None)
    print(stats_markdown(s))
    k, c = s["kappa"], s["self_consistency"]
    print(f"pooled: kappa n = {k['items']} item pairs in {k['pairs']} pair(s) of annotators, "
          f"self-consistency n = {c['repeats']} repeats")
    if o.out:
        write_json(Path(o.out) / "stats.json", s, indent=2)
        print(f"wrote {o.out}/stats.json")
    if o.json:
        print(json.dumps(s, indent=2))


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


def cmd_export_rotations(o: ExportRotationsOptions) -> None:
    """``hf-real3d export-rotations``."""
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
