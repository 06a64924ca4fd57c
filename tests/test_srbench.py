import base64
import io
import itertools
import json

import numpy as np
import pytest
from helpers.data import three_question_srbench

from hf_real3d._io import FormatError
from hf_real3d.choices import LETTERS
from hf_real3d.scoring import chance_accuracy
from hf_real3d.srbench import (
    baselines,
    complementary,
    expand,
    parse_qid,
    read_tsv,
    score_rows,
    write_tsv,
)
from hf_real3d.synth.render import Camera, scene_mesh_arrays
from hf_real3d.synth.rooms import generate_room
from hf_real3d.synth.srbench_gen import (
    SRBenchConfig,
    World,
    _scene_rows,
    answer_text,
    mirror_world,
    srbench_scene,
)


def flipped_answer_matches_mirror(row, scene_world, cfg) -> bool:
    """Check a FlipEval item on geometry: the *same* question asked of the mirrored world
    has the flipped item's answer, and the rule-based ``mirrored_answer`` agrees."""
    from hf_real3d.srbench.format import flip_expand, mirrored_answer

    fields = {k: v for k, v in json.loads(row["camera"]).items()
              if k in Camera.__dataclass_fields__}
    cam = Camera(**{**fields, "position": tuple(fields["position"])})
    flipped = next(r for r in flip_expand([row]) if r["flipped"])
    mirrored = answer_text(row["category"], tuple(row["objects"]),
                           mirror_world(scene_world, cam), cam, cfg)
    text = flipped["options"][LETTERS.index(flipped["answer"])]
    return (flipped["question"] == row["question"] and mirrored == text
            and mirrored_answer(row) == flipped["answer"])


def _in_fresh_process(fn, *args):
    """Run a rendering job in its own process: open3d's offscreen renderer slows down badly
    once a process has loaded several meshes (see hf_real3d.synth.render)."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(fn, *args).result(timeout=300)


def _render_box(target, cam):
    import open3d as o3d

    from hf_real3d.synth.render import Renderer

    r = Renderer(cam.width, cam.height)
    box = o3d.geometry.TriangleMesh.create_box(0.08, 0.08, 0.08)
    box.translate(np.asarray(target) - 0.04)
    v, t = np.asarray(box.vertices), np.asarray(box.triangles)
    r.set_mesh((v, np.tile([1.0, 0.0, 0.0], (len(v), 1)), t))
    return r.render(cam)


def mirror_scene_mesh(arrays: tuple[np.ndarray, ...], camera: Camera) -> tuple[np.ndarray, ...]:
    """The scene reflected across the camera's vertical plane (normal = camera x axis):
    its render is the horizontal flip of the original render."""
    v, c, t = arrays
    n = camera.world_from_cam()[:, 0]
    d = (v - np.asarray(camera.position)) @ n
    return v - 2 * d[:, None] * n[None, :], c, t[:, [0, 2, 1]]  # keep faces front-facing


def _render_flip_pair(seed, cam):
    from hf_real3d.synth.render import Renderer

    scene = generate_room("srb0009_00", np.random.default_rng(seed))
    arrays = scene_mesh_arrays(scene)
    r = Renderer(cam.width, cam.height)
    r.set_mesh(arrays)
    original = r.render(cam)
    r.set_mesh(mirror_scene_mesh(arrays, cam))
    return original, r.render(cam)


@pytest.fixture(scope="module")
def synth_rows():
    cfg = SRBenchConfig(seed=5, scenes=1, questions_per_scene=12, width=256, height=256)
    common, uncommon = _in_fresh_process(_scene_rows, cfg, 0)
    assert common and len(common) == len(uncommon)
    return cfg, common, uncommon


def test_qid_parsing():
    assert parse_qid("abc-12-flip-3") == ("abc-12", True, 3)
    assert parse_qid("abc-1") == ("abc", False, 1)
    assert parse_qid("x-flip") == ("x", True, 0)


def test_tsv_roundtrip_exact(synth_rows, tmp_path):
    _, common, _ = synth_rows
    rows = expand(common)
    for i, r in enumerate(rows):
        r["index"] = i
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    write_tsv(rows, a)
    back = read_tsv(a)
    write_tsv(back, b)
    assert a.read_bytes() == b.read_bytes()
    assert [r["qid"] for r in back] == [r["qid"] for r in rows]
    assert [r["options"] for r in back] == [r["options"] for r in rows]
    assert [r["circular_group"] for r in back] == [r["circular_group"] for r in rows]
    assert back[0]["image_bytes"] == rows[0]["image_bytes"]


def test_bad_tsv_rows(synth_rows, tmp_path):
    _, common, _ = synth_rows
    rows = expand(common[:1])
    for i, r in enumerate(rows):
        r["index"] = i

    def write_with(**change):
        bad = [dict(r) for r in rows]
        bad[1].update(change)
        p = tmp_path / "bad.tsv"
        write_tsv(bad, p)
        return p

    with pytest.raises(FormatError, match=r"row 1 .*not a base64-encoded image"):
        read_tsv(write_with(image="not-base64!!", image_bytes=None))
    with pytest.raises(FormatError, match=r"answer 'D' is not among the option letters"):
        read_tsv(write_with(answer="D", C="", D=""))
    with pytest.raises(FormatError, match=r"category 'height_lower' is not one of the 12"):
        read_tsv(write_with(category="height_lower"))
    orphan = [r for r in rows if r["flipped"]][:1] + [r for r in rows if not r["flipped"]][1:]
    p = tmp_path / "orphan.tsv"
    write_tsv([r for r in rows if r["flipped"] or r["shift"]], p)
    with pytest.raises(FormatError, match="has no original question"):
        read_tsv(p)
    assert orphan  # the expansion made flip rows


@pytest.mark.slow
def test_projection_hits_rendered_pixels():
    cam = Camera((0.0, 0.0, 1.5), yaw=0.2, pitch=-0.15, roll=0.35, width=256, height=256)
    for target in (np.array([3.0, 0.8, 1.0]), np.array([2.5, -0.4, 1.9])):
        img = _in_fresh_process(_render_box, target, cam)
        ys, xs = np.where((img[..., 0] > 200) & (img[..., 1] < 60) & (img[..., 2] < 60))
        u, vv, depth = cam.project(target[None])[0]
        assert depth > 0 and len(xs) > 3
        assert abs(xs.mean() - u) < 1.5 and abs(ys.mean() - vv) < 1.5


@pytest.mark.slow
def test_flipped_render_equals_mirrored_scene():
    scene = generate_room("srb0009_00", np.random.default_rng(9))
    w, d, _ = scene.extras["room_size"]
    cam = Camera((0.6, 0.6, 1.6), yaw=np.arctan2(d / 2 - 0.6, w / 2 - 0.6), pitch=-0.3,
                 roll=0.2, width=256, height=256)
    original, mirrored = _in_fresh_process(_render_flip_pair, 9, cam)
    flipped = np.fliplr(original).astype(int)
    mirrored = mirrored.astype(int)
    close = (np.abs(flipped - mirrored).max(-1) <= 30).mean()
    assert close > 0.97, close  # equal up to rasterisation at edges


def test_flip_items_match_mirrored_geometry(synth_rows):
    cfg, common, _ = synth_rows
    scene = srbench_scene(np.random.default_rng(common[0]["scene_seed"]), 0)
    world = World.from_scene(scene)
    assert all(flipped_answer_matches_mirror(r, world, cfg) for r in common)


def test_cameras_are_what_they_claim(synth_rows):
    _, common, uncommon = synth_rows
    for c, u in zip(common, uncommon):
        assert c["pair_id"] == u["pair_id"] and c["question"] == u["question"]
        cc, uc = json.loads(c["camera"]), json.loads(u["camera"])
        assert abs(cc["measured_roll"]) < 1e-6 and -25.01 <= cc["measured_pitch"] <= 5.01
        assert 1.4 <= cc["measured_height"] <= 1.8
        strong_roll = abs(uc["measured_roll"]) >= 25 - 1e-6
        high = uc["measured_height"] >= 2.3 - 1e-6 and uc["measured_pitch"] <= -35 + 1e-6
        low = uc["measured_height"] <= 0.45 + 1e-6 and uc["measured_pitch"] >= 5 - 1e-6
        assert strong_roll or high or low, uc
        # the stated values are the ones in the extrinsic matrix
        cam = Camera(tuple(uc["position"]), uc["yaw"], uc["pitch"], uc["roll"])
        assert cam.measured()["roll"] == pytest.approx(np.degrees(uc["roll"]), abs=1e-6)
        assert cam.measured()["pitch"] == pytest.approx(np.degrees(uc["pitch"]), abs=1e-6)


def test_baselines_match_exact_enumeration(synth_rows):
    _, common, _ = synth_rows
    rows = expand(common)
    b = baselines(rows)
    # enumerate every answer assignment of each circular group: share all-correct
    exact = []
    for r in common:
        n = len(r["options"])
        combos = list(itertools.product(range(n), repeat=n))
        exact.append(sum(all(c == 0 for c in combo) for combo in combos) / len(combos) * 100)
    assert b["random"]["circular"]["overall"] == pytest.approx(np.mean(exact))
    ns = [len(r["options"]) for r in common]
    assert b["random++"]["circular"]["overall"] == pytest.approx(
        chance_accuracy(ns, consistent=True))
    # vanilla is the mean over every row (VLMEvalKit's), every option order and mirror
    assert b["random"]["vanilla"]["overall"] == pytest.approx(
        np.mean([100 / len(r["options"]) for r in rows]))
    perfect = score_rows(rows, [r["answer"] for r in rows])
    assert all(perfect[m]["overall"] == 100.0 for m in ("vanilla", "circular", "flip",
                                                        "flip_circular"))
    assert b["always-A"]["circular"]["overall"] <= b["always-A"]["vanilla"]["overall"]


def test_complementary_questions():
    rows = [{"qid": "q1", "base_qid": "q1", "question": "Which is higher, the a or the b?",
             "options": ["a", "b"], "answer": "A", "shift": 0, "flipped": False,
             "category": "height_higher"}]
    comp = complementary(rows)
    assert comp[0]["question"] == "Which is lower, the a or the b?" and comp[0]["answer"] == "B"


def test_image_is_png(synth_rows):
    from PIL import Image

    _, common, _ = synth_rows
    img = Image.open(io.BytesIO(common[0]["image_bytes"]))
    assert img.size == (256, 256)
    assert base64.b64encode(common[0]["image_bytes"])


def _row(question, options, answer, category):
    return {"qid": "q", "base_qid": "q", "question": question, "options": options,
            "answer": answer, "category": category, "shift": 0, "flipped": False,
            "circular_group": "q", "flip_group": "q"}


@pytest.mark.parametrize("question,options,answer,flipped_answer", [
    ("Is the lamp on the left side of the bed?", ["yes", "no"], "A", "B"),
    ("Is the lamp on the left side of the bed?", ["no", "yes"], "A", "B"),
    ("From the bed's perspective, where is the lamp?",
     ["in front", "on the left", "behind", "on the right"], "B", "D"),
    ("From the bed's perspective, where is the lamp?",
     ["in front", "on the left", "behind", "on the right"], "C", "C"),
    ("If I stand at the bed and face the sofa, is the lamp on my left or on my right?",
     ["right", "left"], "B", "A"),
    ("Which object is higher in 3D world space, the lamp or the bed?", ["bed", "lamp"], "B",
     "B"),
    ("Is the lamp above the bed?", ["yes", "no"], "A", "A"),
])
def test_flipeval_keeps_the_question_and_flips_left_right_answers(question, options, answer,
                                                                   flipped_answer):
    from hf_real3d.srbench import flip_expand

    orig, flipped = flip_expand([_row(question, options, answer, "orientation_on_the_left")])
    assert flipped["flipped"] and flipped["question"] == question  # the same question
    assert flipped["options"] == options and flipped["answer"] == flipped_answer
    assert flipped["qid"] == "q-flip" and orig["answer"] == answer


def test_flipeval_undecidable_mirror_is_an_error():
    from hf_real3d._io import FormatError
    from hf_real3d.srbench import flip_expand

    with pytest.raises(FormatError, match="cannot tell the answer of the mirrored image"):
        flip_expand([_row("Which object is on the left of the bed?", ["lamp", "sofa"], "A",
                          "orientation_on_the_left")])


def test_always_yes_fails_every_left_right_flip_pair(synth_rows):
    _, common, _ = synth_rows
    rows = expand(common)
    b = baselines(rows)
    assert b["always-A"]["flip_circular"]["overall"] <= \
        b["random++"]["flip_circular"]["overall"] + 1e-9
    # on the left/right questions, answering "yes" always fails every flip pair
    lr = [r for r in rows if r["category"] == "orientation_on_the_left"]
    assert lr
    s = score_rows(lr, ["yes"] * len(lr))
    assert s["flip"]["overall"] == 0.0


def test_vlm_path_end_to_end(tmp_path):
    """A tiny random image-text-to-text model saved to a folder answers a built 3DSRBench
    folder through `evaluate-3dsrbench --model NAME=PATH` (no download)."""

    from helpers.tiny_vlm import save_tiny_vlm

    from hf_real3d.cli import main

    folder = three_question_srbench(tmp_path / "srb")
    model = save_tiny_vlm(tmp_path / "tiny")
    out = tmp_path / "report"
    assert main(["evaluate-3dsrbench", "--dataset", str(folder), "--model", f"tiny={model}",
                 "--text_only", "none", "--out", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())
    for config in ("synthetic_common", "synthetic_uncommon"):
        tiny = m[config]["tiny"]
        # 3 questions + 1 complementary comparative, each flipped and circularly shifted
        assert tiny["n"] == m[config]["always-A"]["n"] == 16
        assert 0 <= tiny["unparsed"] <= tiny["n"]
        for metric in ("vanilla", "circular", "flip", "flip_circular"):
            assert 0.0 <= tiny[metric]["overall"] <= 100.0
    assert "| tiny |" in (out / "report.md").read_text()


@pytest.mark.parametrize("suffix", [".tsv", ".xlsx"])
def test_vlmevalkit_result_tables_are_read_as_they_are(synth_rows, tmp_path, suffix):
    import pandas as pd

    from hf_real3d.srbench.predictions import load_srbench_predictions

    _, common, _ = synth_rows
    rows = expand(common)
    table = pd.DataFrame([{"index": i, "qid": r["qid"], "question": r["question"],
                           "answer": r["answer"], "category": r["category"],
                           "prediction": f"The answer is {r['answer']}."}
                          for i, r in enumerate(rows)])
    f = tmp_path / f"MyVLM_3DSRBench{suffix}"
    if suffix == ".xlsx":
        table.to_excel(f, index=False)
    else:
        table.to_csv(f, sep="\t", index=False)
    name, preds = load_srbench_predictions(f"myvlm={f}")
    assert name == "myvlm" and len(preds) == len(rows)
    s = score_rows(rows, [preds[(None, r["qid"])] for r in rows])
    assert s["flip_circular"]["overall"] == 100.0 and s["unparsed"] == 0



class _NoRender:
    """Geometry-only generation: blank images instead of renders."""

    def set_mesh(self, *a):
        pass

    def render(self, cam):
        return np.zeros((2, 2, 3), np.uint8)


@pytest.fixture(scope="module")
def demo_sized_rows():
    """The demo's synthetic 3DSRBench sizes (DemoConfig's scenes, camera pairs and questions
    tried per scene), balanced as the builder does; renders faked."""
    import hf_real3d.synth.srbench_gen as gen
    from hf_real3d.demo import DemoConfig

    d = DemoConfig()
    cfg = gen.SRBenchConfig(seed=0, scenes=d.srbench_scenes, views_per_scene=d.srbench_views,
                            questions_per_scene=d.srbench_questions_per_scene)
    common, uncommon = [], []
    for s in range(cfg.scenes):
        c, u = gen._scene_rows(cfg, s, _NoRender())
        common += c
        uncommon += u
    return gen._balance(common, uncommon)


def test_demo_sized_generator_covers_all_12_types(demo_sized_rows):
    from hf_real3d.demo import DemoConfig
    from hf_real3d.srbench.format import CATEGORIES

    common, uncommon = demo_sized_rows
    cats = {r["category"] for r in common}
    assert cats == set(CATEGORIES), sorted(set(CATEGORIES) - cats)
    # at least 12 balanced questions survive per scene (72 on the demo's 5 scenes)
    assert len(common) >= 12 * DemoConfig().srbench_scenes
    assert [r["qid"] for r in common] == [r["qid"] for r in uncommon]
    # yes/no and left/right answers are 50/50 per type
    for cat in CATEGORIES:
        texts = [r["options"][LETTERS.index(r["answer"])] for r in common
                 if r["category"] == cat]
        for a, b in (("yes", "no"), ("left", "right")):
            assert texts.count(a) == texts.count(b), (cat, a)
    for r in common:  # the objects a question names are distinct
        labels = [w for w in r["options"] if w not in ("yes", "no", "left", "right")]
        assert len(set(labels)) == len(labels)


def test_always_yes_and_always_a_at_most_random_pp_on_the_demo_benchmark(demo_sized_rows):
    rows = expand(complementary(demo_sized_rows[0]) + demo_sized_rows[0])
    b = baselines(rows)
    yes = score_rows(rows, ["yes"] * len(rows))
    # flip+circular needs every order of both images: a fixed letter or a fixed "yes"
    # scores no more than a consistent random guess (FlipEval alone pairs one order with its
    # mirror, as the field scores it, and does not test position bias: CircularEval does)
    rpp = b["random++"]["flip_circular"]["overall"]
    assert b["always-A"]["flip_circular"]["overall"] == 0.0
    assert yes["flip_circular"]["overall"] <= rpp + 1e-9
    # on left/right questions a fixed "yes" fails every FlipEval pair
    lr = [i for i, r in enumerate(rows) if r["category"] == "orientation_on_the_left"
          and sorted(r["options"]) == ["no", "yes"]]
    assert lr and score_rows([rows[i] for i in lr], ["yes"] * len(lr))["flip"]["overall"] == 0


def test_label_cap_gives_rooms_of_unique_labels():
    from collections import Counter

    for seed in range(5):
        scene = srbench_scene(np.random.default_rng([0, 77, seed]), seed)
        counts = Counter(o.label for o in scene.non_structural())
        assert max(counts.values()) == 1, counts
    with pytest.raises(ValueError, match="label_cap >= 1"):
        generate_room("x", np.random.default_rng(0), label_cap=0)


# FlipEval under every camera: an independent statement of the rule (not the generator's
# mirror): relations of handedness flip, nothing else changes
_HANDED = {"orientation_on_the_left": {"yes": "no", "no": "yes"},
           "orientation_viewpoint": {"on the left": "on the right", "on the right": "on the left",
                                     "in front": "in front", "behind": "behind"},
           "multi_object_viewpoint_towards_object": {"left": "right", "right": "left"}}


def _rule_flip(category: str, answer_text: str) -> str:
    return _HANDED.get(category, {}).get(answer_text, answer_text)


def _check_flips(rows):
    for r in expand(rows):
        if not r["flipped"] or r["shift"]:
            continue
        orig = next(o for o in rows if o["qid"] == r["base_qid"])
        got = r["options"][LETTERS.index(r["answer"])]
        want = _rule_flip(r["category"], orig["options"][LETTERS.index(orig["answer"])])
        assert got == want, (r["qid"], r["category"], r["question"], got, want,
                             json.loads(orig["camera"]).get("measured_roll"))


def test_flip_answers_follow_handedness_under_rolled_and_steep_cameras(synth_rows):
    """Every synthetic flip item of both splits obeys the rule, and the uncommon split has
    rolled or steep cameras to test it on."""
    _, common, uncommon = synth_rows
    _check_flips(common)
    _check_flips(uncommon)
    cams = [json.loads(u["camera"]) for u in uncommon]
    assert any(abs(c["measured_roll"]) >= 25 - 1e-6 or abs(c["measured_pitch"]) >= 5 - 1e-6
               for c in cams)


@pytest.mark.parametrize("roll_deg,pitch_deg", [(0, 0), (40, 0), (-35, -20), (30, 30),
                                                (0, -60)])
def test_mirroring_a_rolled_camera_flips_an_objects_left_side(roll_deg, pitch_deg):
    """The measured case: 'Is the table on the left side of the microwave?' was 'yes' in the
    original and the flipped item under a rolled camera. The microwave faces +x; the table
    is on its left (+y). Under any camera the mirrored answer is 'no'; heights stay."""
    from hf_real3d.synth.srbench_gen import World, answer_text, mirror_world

    w = World(center={1: np.array([2.0, 0.0, 1.0]), 2: np.array([2.0, 1.2, 0.4])},
              size={1: np.array([0.4, 0.3, 0.3]), 2: np.array([1.0, 0.6, 0.8])},
              front={1: np.array([1.0, 0.0]), 2: np.array([0.0, 1.0])},
              label={1: "microwave", 2: "table"})
    cfg = SRBenchConfig()
    cam = Camera((0.0, -0.3, 1.5), yaw=0.3, pitch=np.radians(pitch_deg),
                 roll=np.radians(roll_deg))
    left = answer_text("orientation_on_the_left", (2, 1), w, cam, cfg)
    mirrored = mirror_world(w, cam)
    assert left == "yes"
    assert answer_text("orientation_on_the_left", (2, 1), mirrored, cam, cfg) == "no"
    assert answer_text("height_higher", (1, 2), mirrored, cam, cfg) == \
        answer_text("height_higher", (1, 2), w, cam, cfg)
    assert answer_text("location_closer_to_camera", (1, 2), mirrored, cam, cfg) == \
        answer_text("location_closer_to_camera", (1, 2), w, cam, cfg)


def test_exported_tsv_shows_every_row_its_own_image_under_vlmevalkits_rule(tmp_path):
    """VLMEvalKit writes each TSV row's image to `{index}.jpg` and reuses a file that exists:
    every row needs its own index, or a mirrored row is shown its original's image and
    FlipEval measures nothing."""
    import base64
    import io

    import numpy as np
    import pandas as pd
    from PIL import Image

    from hf_real3d.srbench import build_srbench

    def half(left, right):
        a = np.zeros((8, 8, 3), np.uint8)
        a[:, :4], a[:, 4:] = left, right
        buf = io.BytesIO()
        Image.fromarray(a).save(buf, format="PNG")
        return buf.getvalue()

    rows = []
    for i, (q, opts, ans, cat) in enumerate([
            ("Is the lamp on the left side of the bed?", ["yes", "no"], "A",
             "orientation_on_the_left"),
            ("Is the lamp above the bed?", ["no", "yes"], "B", "location_above")]):
        qid = f"T000000{i}"
        rows.append({"index": i, "qid": qid, "question": q, "options": opts, "answer": ans,
                     "category": cat, "group": "x",
                     "image_bytes": half((255, 0, 0), (0, 0, 255 - 50 * i)),
                     "image_source": "test", "image_url": "", "base_qid": qid,
                     "circular_group": qid, "flip_group": qid, "shift": 0, "flipped": False,
                     "pair_id": f"t{i}", "camera": "{}",
                     **{k: (opts[j] if j < len(opts) else "") for j, k in enumerate("ABCD")}})
    build_srbench(tmp_path / "srb", synthetic={"synthetic_common": rows,
                                               "synthetic_uncommon": rows, "stats": {}},
                  export_tsv=True)
    for name in ("synthetic_common", "synthetic_uncommon"):
        df = pd.read_csv(tmp_path / f"srb/tsv/{name}.tsv", sep="\t")
        assert df["index"].is_unique, df["index"].tolist()
        shown = tmp_path / name
        shown.mkdir()
        for r in df.itertuples():  # VLMEvalKit's dump: write unless the file exists
            path = shown / f"{r.index}.jpg"
            if not path.exists():
                Image.open(io.BytesIO(base64.b64decode(r.image))).convert("RGB").save(path)
        pixels = {r.qid: np.asarray(Image.open(shown / f"{r.index}.jpg")) for r in
                  df.itertuples()}
        flipped = [q for q in df.qid if "-flip" in q]
        assert flipped
        for q in flipped:
            original = q.replace("-flip", "")
            assert np.abs(pixels[q].astype(int) -
                          np.fliplr(pixels[original]).astype(int)).max() < 40, q
            assert np.abs(pixels[q].astype(int) - pixels[original].astype(int)).max() > 100, q
