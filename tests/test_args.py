"""Recipe YAML files: a key set twice names both lines, a list for a scalar is refused, before
anything is created."""

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def test_recipe_yaml_key_twice_and_list_for_a_scalar(tmp_path):
    from hf_real3d.training.args import parse_recipe_args

    cfg = tmp_path / "r.yaml"
    cfg.write_text("learning_rate: 0.001\nseed: 1\nlearning_rate: 0.01\n")
    with pytest.raises(FormatError, match=r"r.yaml: line 3: key 'learning_rate' is set twice "
                                          r"\(first at line 1\)"):
        parse_recipe_args(["--config", str(cfg)])
    cfg.write_text("lr_scheduler_type: [cosine]\n")
    with pytest.raises(TypeError, match=r"r.yaml: lr_scheduler_type: expected .* but got "
                                        r"\['cosine'\] \(list\)"):
        parse_recipe_args(["--config", str(cfg)])


@settings(max_examples=10, deadline=None)
@given(keys=st.lists(st.sampled_from(["learning_rate", "seed", "num_train_epochs",
                                      "weight_clip", "epsilon"]), min_size=2, max_size=6),
       bom=st.booleans())
def test_any_yaml_key_set_twice_is_named(tmp_path_factory, keys, bom):
    from hf_real3d.training.args import parse_recipe_args

    values = {"learning_rate": 0.001, "seed": 1, "num_train_epochs": 2.0, "weight_clip": 5.0,
              "epsilon": 0.001}
    cfg = tmp_path_factory.mktemp("yaml") / "r.yaml"
    cfg.write_bytes((b"\xef\xbb\xbf" if bom else b"") +
                    "".join(f"{k}: {values[k]}\n" for k in keys).encode())
    repeated = [k for i, k in enumerate(keys) if k in keys[:i]]
    if repeated:
        first = keys.index(repeated[0]) + 1
        with pytest.raises(FormatError, match=f"key '{repeated[0]}' is set twice "
                                              f"\\(first at line {first}\\)"):
            parse_recipe_args(["--config", str(cfg)])
    else:
        _, args = parse_recipe_args(["--config", str(cfg)])
        assert all(getattr(args, k) == values[k] for k in keys)
