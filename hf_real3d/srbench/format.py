"""3DSRBench rows: the official VLMEvalKit TSV, qid grouping, categories, expansions.

TSV columns: ``index, qid, question, A, B, C, D, answer, category, image`` (base64),
``image_source, image_url``. qid suffixes: ``-1``/``-2``/``-3`` are circular shifts of the
options, ``-flip`` the horizontally mirrored image with the same question, whose answer
follows the mirrored scene (``-flip-1`` ... both). Derived columns (explicit, never
arithmetic on indices):

* ``options`` (non-empty A..D), ``group`` (height / location / orientation / multi_object),
* ``base_qid`` (no suffix), ``shift`` (0-3), ``flipped`` (bool),
* ``circular_group`` = qid without the shift suffix (one per image and question),
* ``flip_group`` = ``base_qid`` (original and flipped, all shifts).
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image, ImageOps

from hf_real3d._io import FormatError, atomic_path, first_repeat
from hf_real3d.choices import LETTERS, circular_shifts, swap_left_right
from hf_real3d.scoring import MetricInputError, check_circular_groups

__all__ = ["CATEGORIES", "GROUPS", "TSV_COLUMNS", "QID_FORM", "parse_qid", "qid_base", "read_tsv",
           "write_tsv", "circular_expand", "flip_expand", "mirrored_answer", "complementary",
           "rows_to_dataset"]

GROUPS: dict[str, tuple[str, ...]] = {
    "height": ("height_higher",),
    "location": ("location_above", "location_closer_to_camera", "location_next_to"),
    "orientation": ("orientation_in_front_of", "orientation_on_the_left",
                    "orientation_viewpoint"),
    "multi_object": ("multi_object_closer_to", "multi_object_facing",
                     "multi_object_viewpoint_towards_object", "multi_object_parallel",
                     "multi_object_same_direction"),
}
CATEGORIES: dict[str, str] = {c: g for g, cs in GROUPS.items() for c in cs}
TSV_COLUMNS = ("index", "qid", "question", "A", "B", "C", "D", "answer", "category", "image",
               "image_source", "image_url")
_QID = re.compile(r"^(?P<base>.+?)(?P<flip>-flip)?(?:-(?P<shift>[1-3]))?$")
#: the real benchmark's qids, which VLMEvalKit, lmms-eval and the authors' script group by
#: position (``qid[:8]``, ``qid[:13]``, a trailing ``-N``)
QID_FORM = re.compile(r"^[A-Z0-9]{8}(?:-flip)?(?:-[1-3])?$")
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


def qid_base(key: str) -> str:
    """An 8-character base qid (capitals and digits) derived from any stable key, for rows
    that must group like the real benchmark's (the synthetic renders, their complements)."""
    digest = int.from_bytes(hashlib.sha1(key.encode()).digest()[:5], "big")
    return "".join(_B32[(digest >> (5 * i)) & 31] for i in range(7, -1, -1))


def parse_qid(qid: str) -> tuple[str, bool, int]:
    """(base qid, flipped, shift) from a 3DSRBench qid."""
    m = _QID.match(str(qid))
    if not m:
        raise FormatError(f"qid {qid!r} is empty or malformed")
    return m.group("base"), bool(m.group("flip")), int(m.group("shift") or 0)


def _derive(row: dict[str, Any], where: str) -> dict[str, Any]:
    opts = [row[k] for k in "ABCD" if row.get(k) not in (None, "")]
    if len(opts) < 2:
        raise FormatError(f"{where}: fewer than two options")
    if row["answer"] not in LETTERS[: len(opts)]:
        raise FormatError(f"{where}: answer {row['answer']!r} is not among the option letters "
                          f"{list(LETTERS[:len(opts)])}")
    if row["category"] not in CATEGORIES:
        raise FormatError(f"{where}: category {row['category']!r} is not one of the 12 "
                          f"3DSRBench categories {sorted(CATEGORIES)}")
    if not QID_FORM.match(str(row["qid"])):
        raise FormatError(f"{where}: qid {row['qid']!r} is not of 3DSRBench's form: 8 capitals "
                          "or digits, then optionally -flip and -1..-3 (VLMEvalKit, lmms-eval and "
                          "the authors' script group by qid[:8] and a trailing -N); rename it")
    base, flipped, shift = parse_qid(row["qid"])
    return {**row, "options": opts, "group": CATEGORIES[row["category"]], "base_qid": base,
            "flipped": flipped, "shift": shift,
            "circular_group": base + ("-flip" if flipped else ""), "flip_group": base}


def _decode_image(b64: str, where: str) -> bytes:
    try:
        data = base64.b64decode(b64, validate=True)
        Image.open(io.BytesIO(data)).verify()
    except (binascii.Error, ValueError, OSError) as err:
        raise FormatError(f"{where}: image column is not a base64-encoded image ({err}); "
                          "re-export the TSV or drop the row") from None
    return data


def read_tsv(path: str | os.PathLike, *, decode_images: bool = True) -> list[dict[str, Any]]:
    """Rows of an official 3DSRBench TSV with derived columns; validates every row.

    Raises :class:`FormatError` naming the row for a bad base64 image, an answer letter
    outside the options, a category outside the 12, a repeated qid, a circular group whose
    shifted rows permute different option sets, and a flipped row whose original question
    is missing.
    """
    path = Path(path)
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_MINIMAL)
    missing = [c for c in TSV_COLUMNS if c not in df.columns]
    if missing:
        raise FormatError(f"{path}: missing TSV columns {missing}; expected {list(TSV_COLUMNS)}")
    rows = []
    for i, rec in enumerate(df.to_dict("records")):
        where = f"{path.name} row {i} (qid {rec['qid']})"
        row = _derive(rec, where)
        if decode_images:
            row["image_bytes"] = _decode_image(rec["image"], where)
        rows.append(row)
    rep = first_repeat(r["qid"] for r in rows)
    if rep:
        raise FormatError(f"{path.name} row {rep[1]}: qid {rows[rep[1]]['qid']!r} repeats row "
                          f"{rep[0]}; every qid must be unique (drop the copy)")
    codes, keys = pd.factorize(pd.Series([r["circular_group"] for r in rows], dtype=object))
    try:  # the rule the evaluators apply, checked where the data is built
        check_circular_groups(codes, list(keys), [r["options"] for r in rows])
    except MetricInputError as err:
        raise FormatError(f"{path.name}: {err}; fix the shifted rows' options") from None
    originals = {(r["base_qid"], r["shift"]) for r in rows if not r["flipped"]}
    for r in rows:
        if r["flipped"] and (r["base_qid"], r["shift"]) not in originals:
            raise FormatError(f"{path.name}: flip row qid {r['qid']} has no original question "
                              f"{r['base_qid']}; add it or drop the flipped row")
    return rows


def write_tsv(rows: Sequence[dict[str, Any]], path: str | os.PathLike) -> None:
    """Write rows in the official column order (atomic); ``image`` is base64 text."""
    out = []
    for r in rows:
        row = {c: r.get(c, "") for c in TSV_COLUMNS}
        if not row["image"] and r.get("image_bytes"):
            row["image"] = base64.b64encode(r["image_bytes"]).decode()
        out.append(row)
    with atomic_path(path) as tmp:
        pd.DataFrame(out, columns=list(TSV_COLUMNS)).to_csv(tmp, sep="\t", index=False,
                                                            lineterminator="\n")


def _with_options(row: dict[str, Any], options: list[str], answer: str, **kw) -> dict[str, Any]:
    new = dict(row)
    for k, letter in enumerate("ABCD"):
        new[letter] = options[k] if k < len(options) else ""
    new.update(options=list(options), answer=answer, **kw)
    return new


def circular_expand(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each unshifted row plus its ``n - 1`` circular shifts (qid suffixes ``-1..-3``)."""
    out = []
    for r in rows:
        if r["shift"]:
            continue
        for k, (opts, ans) in enumerate(circular_shifts(r["options"], r["answer"])):
            out.append(_with_options(r, opts, ans, shift=k,
                                     qid=r["qid"] + (f"-{k}" if k else "")))
    return out


def mirrored_answer(row: dict[str, Any]) -> str | None:
    """The answer letter of ``row``'s question asked of the horizontally mirrored image
    (3DSRBench §3.4: the question stays, the answer follows the mirrored scene).

    Left and right trade places and nothing else changes: an option that names a side
    becomes the option naming the other side; a yes/no question that asks about a side
    flips its answer; any other answer stays. None when this rule cannot decide (a
    question about a side whose options name neither a side nor yes/no).
    """
    opts, k = list(row["options"]), LETTERS.index(row["answer"])
    text = opts[k]
    if swap_left_right(text) != text:
        other = swap_left_right(text)
        return LETTERS[opts.index(other)] if other in opts else None
    if swap_left_right(row["question"]) == row["question"]:
        return row["answer"]
    low = [o.strip().lower() for o in opts]
    if sorted(low) == ["no", "yes"]:
        return LETTERS[low.index("no" if low[k] == "yes" else "yes")]
    sides = [o for o in opts if swap_left_right(o) != o]
    return None if not sides else row["answer"]


def flip_expand(rows: Sequence[dict[str, Any]], *, flip_image=None) -> list[dict[str, Any]]:
    """Original rows plus a FlipEval copy of each: the image mirrored horizontally
    (``flip_image(bytes) -> bytes``; default PIL), the *same* question and options, and
    the answer of the mirrored scene: ``row["flip_answer"]`` when the producer computed it
    from geometry (the synthetic generator does), else :func:`mirrored_answer`."""
    flip_image = flip_image or _flip_png
    out = []
    for r in rows:
        if r["flipped"]:
            continue
        out.append(r)
        answer = r.get("flip_answer") or mirrored_answer(r)
        if answer is None:
            raise FormatError(f"qid {r['qid']}: cannot tell the answer of the mirrored image "
                              f"({r['question']!r} with options {r['options']}); add its "
                              "-flip row or drop the question")
        f = _with_options(r, list(r["options"]), answer, flipped=True,
                          qid=r["base_qid"] + "-flip" + (f"-{r['shift']}" if r["shift"] else ""),
                          circular_group=r["base_qid"] + "-flip")
        if r.get("image_bytes"):
            f["image_bytes"] = flip_image(r["image_bytes"])
            f["image"] = ""
        out.append(f)
    return out


def _flip_png(data: bytes) -> bytes:
    buf = io.BytesIO()
    # zlib level 1, as the renders: the same pixels, encoded several times faster
    ImageOps.mirror(Image.open(io.BytesIO(data))).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


_COMPLEMENTS = [("higher", "lower"), ("closer to", "farther from"), ("closer", "farther"),
                ("taller", "shorter")]


def complementary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rule-based complementary questions (the paper's way from 2,100 to 2,625): a
    two-option comparative ("Which is higher, X or Y?") becomes its opposite ("Which is
    lower ...?") with the other option as answer. Only unshifted, unflipped rows."""
    out = []
    for r in rows:
        if r["shift"] or r["flipped"] or len(r["options"]) != 2:
            continue
        q = r["question"]
        for a, b in _COMPLEMENTS:
            for x, y in ((a, b), (b, a)):
                if re.search(rf"\b{x}\b", q):
                    new_q = re.sub(rf"\b{x}\b", y, q)
                    other = "B" if r["answer"] == "A" else "A"
                    base = qid_base((r.get("pair_id") or r["base_qid"]) + "-comp")
                    comp = {**r, "question": new_q, "answer": other, "qid": base,
                            "base_qid": base, "circular_group": base, "flip_group": base}
                    if "pair_id" in r:
                        comp["pair_id"] = r["pair_id"] + "-comp"
                    if r.get("flip_answer"):  # the complement's mirrored answer, likewise
                        comp["flip_answer"] = "B" if r["flip_answer"] == "A" else "A"
                    out.append(comp)
                    break
            else:
                continue
            break
    return out


def rows_to_dataset(rows: Sequence[dict[str, Any]]):
    """A ``datasets.Dataset`` with an ``Image`` column and the derived columns."""
    # datasets takes ~0.6 s to import; this module is also imported by every render worker
    # process (one per scene), which never builds a dataset
    import datasets

    feats = datasets.Features({
        "index": datasets.Value("int64"), "qid": datasets.Value("string"),
        "question": datasets.Value("string"),
        "options": datasets.Sequence(datasets.Value("string")),
        "answer": datasets.Value("string"), "category": datasets.Value("string"),
        "group": datasets.Value("string"), "image": datasets.Image(),
        "image_source": datasets.Value("string"), "image_url": datasets.Value("string"),
        "base_qid": datasets.Value("string"), "circular_group": datasets.Value("string"),
        "flip_group": datasets.Value("string"), "shift": datasets.Value("int32"),
        "flipped": datasets.Value("bool"), "pair_id": datasets.Value("string"),
        "camera": datasets.Value("string"),
    })
    data = []
    for i, r in enumerate(rows):
        data.append({
            "index": int(r.get("index", i) or i), "qid": r["qid"], "question": r["question"],
            "options": list(r["options"]), "answer": r["answer"], "category": r["category"],
            "group": r["group"], "image": {"bytes": r.get("image_bytes"), "path": None},
            "image_source": r.get("image_source", ""), "image_url": r.get("image_url", ""),
            "base_qid": r["base_qid"], "circular_group": r["circular_group"],
            "flip_group": r["flip_group"], "shift": int(r["shift"]), "flipped": r["flipped"],
            "pair_id": r.get("pair_id", ""), "camera": r.get("camera", ""),
        })
    return data, feats
