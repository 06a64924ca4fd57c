"""``hf-real3d export-rotations``: the reviewed rotation set in the release's own format.

The rule, per turned item, over the standing (latest) decision of each counted annotator:

1. it counts as reviewed when at least ``min_annotators`` annotators judged it;
2. one discard drops it;
3. with ``min_annotators`` of 2 or more, every annotator must have decided the same: all
   accepted, or all corrected it to the same text (case and spaces aside). An accept beside
   a correction is a disagreement, since the accepting annotator never saw the corrected
   text; the item is disputed and dropped;
4. with ``min_annotators`` 1, the corrections must agree among themselves, and a correction
   beside an accept is used;
5. an item nobody has reviewed enough is dropped, unless ``repairs="all"`` and the checker
   proposed a repair for it (then it takes the repair, ``source`` = ``repaired``; an item
   marked for rewriting is dropped), or ``min_annotators`` is 0 (then it is kept as the input
   has it);
6. a group is exported when every turned viewpoint is kept.

A proposed repair an annotator accepted on the Review tab is a correction like any other
(``source`` = ``reviewed``): ``repairs="reviewed"``, the default, applies only those.

The de-biased set is exported whole, whatever the input: the release's file, the
``real3dqa`` config of a dataset folder (imported, built or made by ``rotate``), or, for a
folder of rotation files alone, viewpoint 0 of every group. Each file keeps the header
(``info``, ``license``, ...) the input had (an imported folder keeps the release's in
``release_headers.json``), so an export from the release folder and from its import are
the same files.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_real3d._io import atomic_dir, check_out, write_json
from hf_real3d.real3dqa.format import (
    RELEASE_VIEWPOINTS,
    debiased_items,
    output_headers,
    release_item,
    write_release,
)

from .agreement import review_stats, select_annotators
from .log import item_label
from .queue import ReviewFolder

__all__ = ["export_rotations", "EmptyExport", "REPAIRS"]

REPAIRS = ("reviewed", "all")
KEPT = ("kept", "repaired", "as_input")
class EmptyExport(ValueError):
    """The export would keep no group (the reason is in the message)."""


def _status(judged: list[dict[str, Any]], min_annotators: int) -> tuple[str, dict | None]:
    """(kept / discarded / disputed / unreviewed, the correction to use or None)."""
    if not judged or len(judged) < min_annotators:
        return "unreviewed", None
    if any(d["decision"] == "discard" for d in judged):
        return "discarded", None
    fixes = [d for d in judged if d["decision"] == "correct"]
    if min_annotators >= 2:
        labels = {item_label(d) for d in judged}
        if len(labels) > 1:
            return "disputed", None
    elif len({item_label(d) for d in fixes}) > 1:
        return "disputed", None
    return "kept", (fixes[0] if fixes else None)


def _repair(proposals: list[dict[str, Any]]) -> tuple[str, list[str] | None]:
    """What ``repairs="all"`` does with an unreviewed item's proposals."""
    if any(p["action"] == "rewrite" for p in proposals):
        return "needs_rewrite", None
    tos = {tuple(p["to"]) for p in proposals if p["action"] == "replace" and p.get("to")}
    if len(tos) != 1:
        return "unreviewed", None
    return "repaired", list(tos.pop())


def _input_sources(rs, dataset: Path) -> dict[tuple[Any, int], str]:
    """Each row's ``source`` as the input states it (a release: ``release``)."""
    if rs.source != "folder":
        return {}
    from hf_real3d.hub import load_frame  # datasets only for folders

    df = load_frame(dataset, "rotations", columns=("question_id", "rotation_deg", "source"))
    if "source" not in df:
        return {}
    return {(q, int(k)): str(s) for q, k, s in zip(df.question_id.tolist(),
                                                   df.rotation_deg.tolist(), df.source)
            if s}


def _empty_reason(names: list[str], all_names: list[str], min_annotators: int,
                  made: dict[str, list], counts: collections.Counter, folder: Path) -> str:
    if not all_names:
        return f"{folder} holds no decisions yet (no annotator file)"
    if not any(made.values()):
        return f"the counted annotators ({', '.join(names)}) have made no decision yet"
    if min_annotators > len(names):
        return (f"--min_annotators {min_annotators}, but {len(names)} annotator(s) are counted "
                f"({', '.join(names)}), so no item counts as reviewed")
    said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v not in KEPT)
    return f"every rotation group has a turned item that is not kept ({said})"


def _item(judged: list[dict[str, Any]], proposals: list[dict[str, Any]] | None,
          row: dict[str, Any], plan: _Plan, as_input: str) -> tuple[str, dict | None, str]:
    """(status, the text to use or None, the row's source) of one turned item."""
    status, fix = _status(judged, max(plan.min_annotators, 1))
    source = "reviewed"
    if status == "unreviewed" and not judged and plan.min_annotators == 0:
        status, source = "as_input", as_input
    if status in ("unreviewed", "as_input") and plan.repairs == "all" and proposals:
        got, answers = _repair(proposals)
        if got != "unreviewed":
            status = got
            if answers is not None:
                fix, source = {"situation": row["situation"], "answers": answers}, "repaired"
    return status, fix, source


@dataclass
class _Plan:
    """What an export keeps: the rule's settings and the annotators counted."""

    min_annotators: int
    repairs: str
    names: list[str]


def _decide(rf: ReviewFolder, plan: _Plan, latest: dict[str, dict], views: list[int]):
    """(kept groups: question_id -> viewpoint -> (text, source), items by status, reviewed
    repairs kept)."""
    rs = rf.rotation_set
    input_sources = _input_sources(rs, Path(rs.path)) if plan.min_annotators == 0 else {}
    counts: collections.Counter = collections.Counter()
    kept: dict[Any, dict[int, tuple[dict | None, str]]] = {}
    reviewed_repairs = 0
    for q, g in rs.groups().items():
        texts, ok = {}, len(g) == len(views)
        for k in sorted(g):
            if not k:
                continue
            judged = [latest[n][(q, k)] for n in plan.names if (q, k) in latest[n]]
            as_input = "release" if rs.source == "release" else \
                input_sources.get((q, k), "input")
            status, fix, source = _item(judged, rf.proposals.get((q, k)), g[k], plan, as_input)
            if status == "kept" and fix is not None and fix.get("repair"):
                reviewed_repairs += 1
            counts[status] += 1
            ok &= status in KEPT
            texts[k] = (fix, source)
        if ok:
            kept[q] = texts
    return kept, counts, reviewed_repairs


def _rotations(rf: ReviewFolder, kept: dict[Any, dict], views: list[int]
               ) -> dict[int, list[dict[str, Any]]]:
    """The release's items of every kept group, each viewpoint with its reviewed text."""
    out = {}
    for k in views:
        items = []
        for q in sorted(kept, key=str):
            fix = kept[q].get(k, (None, ""))[0]
            items.append(release_item(rf.rows[(q, k)], k,
                                      situation=fix["situation"] if fix else None,
                                      answers=fix["answers"] if fix else None))
        out[k] = items
    return out


def _rule(plan: _Plan) -> str:
    return ("kept when no annotator discards it and its decisions agree (with "
            f"min_annotators {plan.min_annotators}"
            + (": every annotator's decision the same, an accept beside a correction "
               "disputed" if plan.min_annotators >= 2 else
               ": every correction the same; a correction beside an accept is used")
            + "); a group when every turned viewpoint is kept"
            + ("; an item the review leaves unreviewed takes the checker's proposed "
               "repair" if plan.repairs == "all" else ""))


def _open(dataset, reviews, out, min_annotators: int, repairs: str) -> ReviewFolder:
    """The review folder with its set, once the arguments are checked."""
    check_out(out, dataset=dataset, reviews=reviews)
    if min_annotators < 0:
        raise ValueError(f"min_annotators {min_annotators}: expected 0 (keep unreviewed items "
                         "as they are) or more")
    if repairs not in REPAIRS:
        raise ValueError(f"repairs {repairs!r}: expected one of {REPAIRS}")
    rf = ReviewFolder.open(reviews, dataset)
    views = sorted({k for _, k in rf.rows})
    if tuple(views) != RELEASE_VIEWPOINTS:
        raise ValueError(f"{dataset}: viewpoints {views}; the release's format holds "
                         f"{list(RELEASE_VIEWPOINTS)}")
    return rf


def export_rotations(dataset: str | os.PathLike, reviews: str | os.PathLike,
                     out: str | os.PathLike, *, min_annotators: int = 1,
                     annotators: Sequence[str] | None = None, repairs: str = "reviewed",
                     allow_empty: bool = False) -> dict[str, Any]:
    """The reviewed set in the release's format (``rotation_{0,90,180,270}.json``, the
    release's id scheme, and the whole de-biased file), with ``review.json`` (the rule, what
    was dropped and why, every item's source when it is not ``reviewed``, and the review's
    figures), written atomically. See the module docstring for the rule. A run that keeps no
    group is an :class:`EmptyExport` saying why, unless ``allow_empty``. Returns the
    summary."""
    rf = _open(dataset, reviews, out, min_annotators, repairs)
    views = list(RELEASE_VIEWPOINTS)
    plan = _Plan(min_annotators, repairs, select_annotators(rf.log, annotators))
    made = rf.log.all_decisions(plan.names)
    latest = {n: rf.log.latest(made[n]) for n in plan.names}
    kept, counts, reviewed_repairs = _decide(rf, plan, latest, views)
    if not kept and not allow_empty:
        why = _empty_reason(plan.names, rf.log.annotators(), min_annotators, made, counts,
                            rf.folder)
        raise EmptyExport(f"export-rotations would keep no rotation group: {why}; nothing was "
                          "written (`allow_empty` writes an empty release anyway)")
    groups = rf.rotation_set.groups()
    debiased, debiased_from = debiased_items(rf.rotation_set, Path(dataset), groups)
    headers, license_name = output_headers(rf.rotation_set, Path(dataset),
                                           "reviewed with hf_real3d")
    order = sorted(kept, key=str)
    sources = collections.Counter(src for q in order for _, src in kept[q].values())
    summary = {
        "dataset": str(dataset), "reviews": str(reviews), "groups": len(groups),
        "exported": len(kept), "items": dict(counts), "min_annotators": min_annotators,
        "annotators": plan.names, "repairs": repairs, "repaired": sources.get("repaired", 0),
        "repairs_reviewed": reviewed_repairs, "sources": dict(sources),
        "item_sources": [[q, k, src] for q in order for k, (_, src) in sorted(kept[q].items())
                         if src != "reviewed"],
        "debiased": {"questions": len(debiased), "from": debiased_from},
        "license": license_name, "rule": _rule(plan), "stats": review_stats(rf, plan.names)}
    if summary["repaired"]:
        summary["note"] = (f"{summary['repaired']} turned items carry the checker's proposed "
                           "repairs, applied without review (source = repaired): scores on "
                           "this release are not the paper's Real-3DQA figures")
    with atomic_dir(out) as tmp:
        write_release(tmp, _rotations(rf, kept, views), debiased, headers)
        write_json(tmp / "review.json", summary, indent=2)
    return summary
