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
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, atomic_dir, check_out, read_json, write_json
from hf_real3d.real3dqa.format import (
    DEBIASED_FILE,
    RELEASE_HEADERS_FILE,
    RELEASE_VIEWPOINTS,
    read_release,
    release_headers,
    release_item,
    write_release,
)

from .agreement import review_stats, select_annotators
from .queue import ReviewFolder, item_label

__all__ = ["export_rotations", "EmptyExport", "REPAIRS"]

REPAIRS = ("reviewed", "all")
_LICENSE_URLS = {"cc-by-4.0": "http://creativecommons.org/licenses/by/4.0/",
                 "cc-by-sa-4.0": "http://creativecommons.org/licenses/by-sa/4.0/"}
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


def _headers(rs, dataset: Path) -> tuple[dict[str, dict[str, Any]], str]:
    """Each output file's header, and the license it states."""
    if rs.source in ("release", "files"):
        heads = release_headers(dataset)
    elif (dataset / RELEASE_HEADERS_FILE).is_file():
        heads = read_json(dataset / RELEASE_HEADERS_FILE)
        if not isinstance(heads, dict) or not all(isinstance(v, dict) for v in heads.values()):
            raise FormatError(f"{dataset / RELEASE_HEADERS_FILE}: not the file names and "
                              "headers import-real3dqa writes; import the release again")
    else:
        heads = {}
    if rs.source == "folder":
        from hf_real3d.hub import card_header  # dataset folders only

        lic = str(card_header(dataset)[0].get("license") or "other")
    else:
        lic = "other"
    default = {"info": {"description": f"Real-3DQA-format rotations of {dataset.name}, reviewed "
                                       "with hf_real3d", "contributor": "hf_real3d"},
               "license": {"name": lic, "url": _LICENSE_URLS.get(lic, "")}}
    names = [f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS] + [DEBIASED_FILE]
    out = {n: heads.get(n) or heads.get("rotation_0.json") or default for n in names}
    said = out["rotation_0.json"].get("license")
    return out, (said.get("name") if isinstance(said, dict) else str(said))


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


def _debiased(rs, dataset: Path, groups: dict[Any, dict[int, dict]]
              ) -> tuple[list[dict[str, Any]], str]:
    """The input's whole de-biased set as release items, and where it came from."""
    if rs.source == "release":
        rows = read_release(dataset).debiased
        return ([release_item(r, 0, question_type=r.get("question_type") or "")
                 for r in rows], f"{DEBIASED_FILE} of {dataset}")
    if rs.source == "folder":
        from hf_real3d.hub import card_configs, load_frame  # datasets only for folders

        if "real3dqa" in card_configs(dataset):
            df = load_frame(dataset, "real3dqa")
            items = []
            for r in df.to_dict("records"):
                r["answers"] = list(r["answers"])
                r["alternative_situation"] = list(r.get("alternative_situation")
                                                  if r.get("alternative_situation") is not None
                                                  else [])
                items.append(release_item(r, 0, question_type=r.get("question_type") or ""))
            return items, f"the real3dqa config of {dataset}"
    rows0 = [g[0] for _, g in sorted(groups.items(), key=lambda x: str(x[0])) if 0 in g]
    return ([release_item(r, 0, question_type=str(r.get("question_type") or ""))
             for r in rows0],
            f"viewpoint 0 of every rotation group ({dataset} holds no de-biased set)")


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
    check_out(out, dataset=dataset, reviews=reviews)
    if min_annotators < 0:
        raise ValueError(f"min_annotators {min_annotators}: expected 0 (keep unreviewed items "
                         "as they are) or more")
    if repairs not in REPAIRS:
        raise ValueError(f"repairs {repairs!r}: expected one of {REPAIRS}")
    rf = ReviewFolder(reviews, dataset, create=False)
    rs = rf.rotation_set
    views = sorted({k for _, k in rf.rows})
    if tuple(views) != RELEASE_VIEWPOINTS:
        raise ValueError(f"{dataset}: viewpoints {views}; the release's format holds "
                         f"{list(RELEASE_VIEWPOINTS)}")
    names = select_annotators(rf, annotators)
    made = rf.all_decisions(names)
    latest = {n: rf.latest(n, made[n]) for n in names}
    groups: dict[Any, dict[int, dict[str, Any]]] = {}
    for (q, k), row in rf.rows.items():
        groups.setdefault(q, {})[k] = row
    counts: collections.Counter = collections.Counter()
    kept_groups: dict[Any, dict[int, tuple[dict | None, str]]] = {}
    reviewed_repairs = 0
    input_sources = _input_sources(rs, Path(dataset)) if min_annotators == 0 else {}
    for q, g in groups.items():
        texts, ok = {}, len(g) == len(views)
        for k in sorted(g):
            if not k:
                continue
            judged = [latest[n][(q, k)] for n in names if (q, k) in latest[n]]
            status, fix = _status(judged, max(min_annotators, 1))
            source = "reviewed"
            if status == "unreviewed" and not judged and min_annotators == 0:
                status = "as_input"
                source = "release" if rs.source == "release" else \
                    input_sources.get((q, k), "input")
            if status in ("unreviewed", "as_input") and repairs == "all" and \
                    (q, k) in rf.proposals:
                got, answers = _repair(rf.proposals[(q, k)])
                if got != "unreviewed":
                    status = got
                    if answers is not None:
                        fix, source = {"situation": g[k]["situation"], "answers": answers}, \
                            "repaired"
            if status == "kept" and fix is not None and fix.get("repair"):
                reviewed_repairs += 1
            counts[status] += 1
            ok &= status in KEPT
            texts[k] = (fix, source)
        if ok:
            kept_groups[q] = texts
    kept = sorted(kept_groups, key=str)
    if not kept and not allow_empty:
        raise EmptyExport(
            f"export-rotations would keep no rotation group: "
            f"{_empty_reason(names, rf.annotators(), min_annotators, made, counts, rf.folder)}"
            "; nothing was written (`allow_empty` writes an empty release anyway)")
    rotations = {}
    for k in views:
        items = []
        for q in kept:
            fix = kept_groups[q].get(k, (None, ""))[0]
            items.append(release_item(groups[q][k], k,
                                      situation=fix["situation"] if fix else None,
                                      answers=fix["answers"] if fix else None))
        rotations[k] = items
    debiased, debiased_from = _debiased(rs, Path(dataset), groups)
    headers, license_name = _headers(rs, Path(dataset))
    item_sources = [[q, k, src] for q in kept for k, (_, src) in sorted(kept_groups[q].items())
                    if src != "reviewed"]
    sources = collections.Counter(src for q in kept for _, src in kept_groups[q].values())
    repaired = sources.get("repaired", 0)
    stats = review_stats(rf, names)
    summary = {
        "dataset": str(dataset), "reviews": str(reviews), "groups": len(groups),
        "exported": len(kept), "items": dict(counts), "min_annotators": min_annotators,
        "annotators": names, "repairs": repairs, "repaired": repaired,
        "repairs_reviewed": reviewed_repairs, "sources": dict(sources),
        "item_sources": item_sources,
        "debiased": {"questions": len(debiased), "from": debiased_from},
        "license": license_name,
        "rule": ("kept when no annotator discards it and its decisions agree (with "
                 f"min_annotators {min_annotators}"
                 + (": every annotator's decision the same, an accept beside a correction "
                    "disputed" if min_annotators >= 2 else
                    ": every correction the same; a correction beside an accept is used")
                 + "); a group when every turned viewpoint is kept"
                 + ("; an item the review leaves unreviewed takes the checker's proposed "
                    "repair" if repairs == "all" else "")),
        "stats": stats}
    if repaired:
        summary["note"] = (f"{repaired} turned items carry the checker's proposed repairs, "
                           "applied without review (source = repaired): scores on this "
                           "release are not the paper's Real-3DQA figures")
    with atomic_dir(out) as tmp:
        write_release(tmp, rotations, debiased, headers)
        write_json(tmp / "review.json", summary, indent=2)
    return summary
