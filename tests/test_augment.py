"""rotation_augment: each training question from its turned viewpoints, answers recomputed
from the geometry, the rows of a question sharing a group; never the evaluation rooms; the
recipes take it as --rotation_augment and the model card records it."""

import json

import pytest
from helpers.recipes import recipe_module

from hf_real3d.hub import load_local
from hf_real3d.training.augment import rotation_augment


@pytest.fixture(scope="module")
def folder(synth_folder):
    return synth_folder


def test_every_question_becomes_its_viewpoints(folder):
    train = load_local(folder, "sqa3d", "train")
    scenes = load_local(folder, "scenes", "train")
    aug = rotation_augment(train, scenes)
    groups: dict[str, list[dict]] = {}
    for r in aug:
        groups.setdefault(r["viewpoint_group"], []).append(r)
    assert set(groups) == {str(q) for q in train["question_id"]}
    turned = {g: rows for g, rows in groups.items() if len(rows) > 1}
    assert len(turned) >= len(train) // 2, (len(turned), len(train))
    original = {str(r["question_id"]): r for r in train}
    for g, rows in turned.items():
        assert sorted(r["rotation_deg"] for r in rows) == [0, 90, 180, 270]
        zero = next(r for r in rows if r["rotation_deg"] == 0)
        assert zero["situation"] == original[g]["situation"]
        assert zero["answers"][0] in original[g]["answers"]
        assert len({r["situation"] for r in rows}) > 1  # the turned situations are rewritten
    alone = [rows for rows in groups.values() if len(rows) == 1]
    assert all(rows[0] == {**original[rows[0]["viewpoint_group"]],
                           "viewpoint_group": rows[0]["viewpoint_group"]} for rows in alone)
    one = rotation_augment(train, scenes, choose="one", seed=1)
    assert len(one) == len(train)
    assert one.to_list() == rotation_augment(train, scenes, choose="one", seed=1).to_list()


def test_evaluation_rooms_and_bad_options_are_refused(folder):
    train = load_local(folder, "sqa3d", "train")
    scenes = load_local(folder, "scenes", "train")
    room = train["scene_id"][0]
    with pytest.raises(ValueError, match=f"share 1 room.*{room}"):
        rotation_augment(train, scenes, exclude_scenes={room})
    with pytest.raises(ValueError, match="expected choose in"):
        rotation_augment(train, scenes, choose="some")
    aug = rotation_augment(train, scenes)
    with pytest.raises(ValueError, match="already has a 'viewpoint_group' column"):
        rotation_augment(aug, scenes)


def test_a_recipe_never_augments_the_rooms_it_is_evaluated_on(folder):
    from hf_real3d.training.args import ScriptArguments
    from hf_real3d.training.recipe import load_training_data

    args = ScriptArguments(dataset_name=str(folder), dataset_train_split="test",
                           rotation_augment="all")
    with pytest.raises(ValueError, match="share 1 room.*evaluation split"):
        load_training_data(args)


@pytest.mark.slow
def test_recipe_trains_viewpoint_dro_on_the_augmented_split_and_says_so(folder, tmp_path):
    sft3 = recipe_module("3drft")
    out = tmp_path / "vdro"
    script_args, training_args = sft3.parse(
        ["--dataset_name", str(folder), "--output_dir", str(out), "--max_steps", "2",
         "--report_to", "none", "--reweighting", "viewpoint_dro", "--rotation_augment", "all",
         "--per_device_train_batch_size", "8", "--hidden_size", "32", "--num_layers", "1"])
    sft3.main(script_args, training_args)
    info = json.loads((out / "hf_real3d_training.json").read_text())
    aug = info["source"]["rotation_augment"]
    assert aug["choose"] == "all" and aug["rows"] > aug["questions"]
    card = (out / "README.md").read_text()
    assert "rotation augmentation: every viewpoint of 4 per question" in card
    assert "viewpoint-robust training" in card
    logs = [h for h in info["metrics"] if h == "global_step"]
    assert logs and info["metrics"]["global_step"] == 2


def _write_rotation_files(aug, out, *, drop=None):
    """The turned rows of ``aug`` as a folder of rotation_{k}.json files (the release's item
    format, every viewpoint under its base id); ``drop``: a (question_id, viewpoint) left
    out."""
    out.mkdir(parents=True, exist_ok=True)
    groups: dict[int, list[dict]] = {}
    for r in aug:
        groups.setdefault(int(r["question_id"]), []).append(r)
    for k in (0, 90, 180, 270):
        items = [{"scene_id": r["scene_id"], "situation": r["situation"],
                  "alternative_situation": [], "question": r["question"],
                  "question_id": q,
                  "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": i + 1}
                              for i, a in enumerate(r["answers"])],
                  "position": r["position"], "rotation": r["rotation"]}
                 for q, rows in groups.items() if len(rows) == 4
                 for r in rows if r["rotation_deg"] == k and (q, k) != drop]
        (out / f"rotation_{k}.json").write_text(json.dumps({"questions": items}))
    return out


def test_a_rotation_set_from_files_gives_the_rows_geometry_gives(folder, tmp_path):
    train = load_local(folder, "sqa3d", "train")
    scenes = load_local(folder, "scenes", "train")
    aug = rotation_augment(train, scenes)
    files = _write_rotation_files(aug, tmp_path / "set")
    from_files = rotation_augment(train, rotations=files)
    key = ("question_id", "rotation_deg", "situation", "answers", "viewpoint_group")
    assert [{k: r[k] for k in key} for r in from_files] == \
        [{k: r[k] for k in key} for r in aug]
    # an incomplete group is refused, naming the question and the missing viewpoint
    q = next(int(r["question_id"]) for r in aug if r["rotation_deg"] == 90)
    short = _write_rotation_files(aug, tmp_path / "short", drop=(q, 180))
    with pytest.raises(ValueError, match=rf"{short}: 1 question\(s\) lack.*question_id {q} "
                                         r"lacks \[180\].*complete"):
        rotation_augment(train, rotations=short)
    # a set holding questions of the evaluation split is refused, naming them
    with pytest.raises(ValueError, match=rf"in the evaluation split \({q}\).*training "
                                         "questions only"):
        rotation_augment(train, rotations=files, exclude_ids={q})
    # a set of other questions matches nothing
    other = load_local(folder, "sqa3d", "test")
    with pytest.raises(ValueError, match="none of the .* questions of the rotation set is a "
                                         "training question"):
        rotation_augment(other, rotations=files)
    with pytest.raises(ValueError, match="no geometry and no rotation set"):
        rotation_augment(train)


def test_only_the_named_kinds_are_turned(folder):
    train = load_local(folder, "sqa3d", "train")
    scenes = load_local(folder, "scenes", "train")
    full = rotation_augment(train, scenes)
    turned_kinds = sorted({r["kind"] for r in full if r["rotation_deg"] != 0})
    keep = turned_kinds[:2]
    part = rotation_augment(train, scenes, kinds=keep)
    assert {r["kind"] for r in part if r["rotation_deg"] != 0} == set(keep)
    assert len(part) == sum(1 if r["kind"] not in keep else 0 for r in full
                            if r["rotation_deg"] == 0) + \
        sum(1 for r in full if r["kind"] in keep) + \
        sum(1 for r in train if r["question_id"] not in set(full["question_id"]))
    with pytest.raises(ValueError, match=r"no question of kind \['nope'\]"):
        rotation_augment(train, scenes, kinds=["nope"])
    with pytest.raises(ValueError, match="no 'family' column"):
        rotation_augment(train, scenes, kinds=keep, kind_column="family")


def test_recipe_refuses_rotation_options_that_cannot_work(folder, tmp_path):
    from hf_real3d.training.args import ScriptArguments
    from hf_real3d.training.recipe import load_training_data

    with pytest.raises(ValueError, match="`rotation_set` without `rotation_augment`: nothing "
                                         "would be augmented; set `rotation_augment` to all"):
        load_training_data(ScriptArguments(dataset_name=str(folder), rotation_set="x"))
    with pytest.raises(ValueError, match="`rotation_viewpoints` 1: expected at least 2"):
        load_training_data(ScriptArguments(dataset_name=str(folder), rotation_augment="all",
                                           rotation_viewpoints=1))
    # a dataset without the rooms' geometry and no rotation set: the fix is named
    with pytest.raises(ValueError, match="has no 'rooms' config .*give `rotation_set`"):
        load_training_data(ScriptArguments(dataset_name=str(folder), rotation_augment="all",
                                           scenes_config="rooms"))
