"""Small datasets and inputs the tests build: a synthetic Real-3DQA folder, 3DSRBench items,
perfect predictions, and the bad-input helpers (a field deleted, the error naming it)."""

import copy
import re
from pathlib import Path


def build_synthetic_real3dqa(root: Path, *, seed: int, test_scenes: int, questions: int) -> Path:
    """A Real-3DQA folder built from synthetic test rooms (``root/r3``; the synthetic data in
    ``root/synth``): an oracle full model and a blind model that never answers, so nothing is
    filtered out and every question rotates from geometry where it can."""
    import json

    from hf_real3d.real3dqa import build_real3dqa
    from hf_real3d.sqa3d import read_split
    from hf_real3d.synth import SynthConfig, build_benchmark

    build_benchmark(root / "synth", SynthConfig(
        seed=seed, scenes={"train": 0, "val": 0, "test": test_scenes},
        questions_per_scene={"test": questions}), workers=1, progress=False)
    recs = read_split(root / "synth/sqa3d", "test")
    full, blind = root / "full.jsonl", root / "blind.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": r.question_id,
                                          "prediction": r.answers[0]}) for r in recs))
    blind.write_text("\n".join(json.dumps({"question_id": r.question_id, "prediction": "zzz"})
                               for r in recs))
    build_real3dqa(root / "synth/sqa3d", root / "synth/scans", root / "r3",
                   pairs=[("o", str(full), str(blind))], progress=False)
    return root / "r3"


def solid_png(color):
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (48, 48), color).save(buf, format="PNG")
    return buf.getvalue()


def three_question_srbench(folder, export_tsv=False):
    """A built 3DSRBench folder of three hand-made questions (plus the builder's
    complementary one, flips and circular shifts), in synthetic_common and _uncommon."""
    from hf_real3d.srbench import build_srbench

    rows = []
    for i, (q, opts, ans, cat, col) in enumerate([
            ("Is the lamp on the left side of the bed?", ["yes", "no"], "A",
             "orientation_on_the_left", "red"),
            ("Which object is higher in 3D world space, the lamp or the bed?", ["lamp", "bed"],
             "B", "height_higher", "blue"),
            ("Is the lamp above the bed?", ["no", "yes"], "B", "location_above", "green")]):
        qid = f"T000000{i}"  # the real benchmark's qid form
        rows.append({"index": i, "qid": qid, "question": q, "options": opts,
                     "answer": ans, "category": cat, "group": "x", "image_bytes": solid_png(col),
                     "image_source": "test", "image_url": "", "base_qid": qid,
                     "circular_group": qid, "flip_group": qid, "shift": 0,
                     "flipped": False, "pair_id": f"t{i}", "camera": "{}",
                     **{k: (opts[j] if j < len(opts) else "") for j, k in enumerate("ABCD")}})
    build_srbench(folder, synthetic={"synthetic_common": rows, "synthetic_uncommon": rows,
                                     "stats": {}}, export_tsv=export_tsv)
    return folder


def perfect_predictions(refs):
    return refs[refs.rotation_deg == 0].assign(
        prediction=[a[0] for a in refs[refs.rotation_deg == 0].answers])[
        ["question_id", "rotation_deg", "prediction"]]


def mutate(data: dict, key: str, rng_pick) -> tuple[dict, tuple[str, ...]]:
    """A copy of ``data`` with one field of one item deleted (or one key inside a field);
    also the names an error about it must give (the field, or the field and its key)."""
    data = copy.deepcopy(data)
    items = data[key]
    item = items[rng_pick[0] % len(items)]
    path = sorted(item)
    field = path[rng_pick[1] % len(path)]
    if isinstance(item[field], dict) and item[field] and rng_pick[2] % 2:
        sub = sorted(item[field])
        gone = sub[rng_pick[2] % len(sub)]
        del item[field][gone]
        return data, (field, gone)
    del item[field]
    return data, (field,)


def assert_named(err: Exception, file_name: str, deleted: tuple[str, ...] | None) -> None:
    """A refused file's error names the file and where: the line or byte of a truncated
    file, the field of a deleted one."""
    msg = str(err)
    assert file_name in msg, msg
    if deleted is None:
        assert re.search(r"line \d+|byte \d+", msg), msg
    else:
        assert any(repr(name) in msg or f"{name} " in msg for name in deleted), (deleted, msg)


def srb_rows(tmp_path):
    from hf_real3d.srbench import expand

    base = {"index": 0, "question": "Is the lamp on the left of the bed?", "A": "yes", "B": "no",
            "C": "", "D": "", "answer": "A", "category": "orientation_on_the_left",
            "image": "", "image_source": "synthetic", "image_url": ""}
    rows = []
    for i in range(3):
        r = dict(base, qid=f"Q000000{i}", index=i)
        r.update({"options": ["yes", "no"], "group": "orientation", "base_qid": f"Q000000{i}",
                  "flipped": False, "shift": 0, "circular_group": f"Q000000{i}",
                  "flip_group": f"Q000000{i}"})
        rows.append(r)
    return expand(rows)


def in_direction(scene, pose, direction: str) -> list:
    """The objects (walls, floor and ceiling aside) whose centre lies in ``direction`` (front,
    left, back, right) from ``pose``, nearest first: what a direction-dependent answer must
    name, from the scene's geometry."""
    import numpy as np

    from hf_real3d.spatial import View

    view = View(scene, pose, margin_deg=0.0)
    return [view.objs[i] for i in np.argsort(view.dist, kind="stable")
            if view.direction(i) == direction]
