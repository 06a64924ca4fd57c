"""rotation_augment: each training question from its turned viewpoints, answers recomputed
from the geometry, the rows of a question sharing a group; never the evaluation rooms; the
recipes take it as --rotation_augment and the model card records it."""

import json

import pytest
from conftest import recipe_module

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
