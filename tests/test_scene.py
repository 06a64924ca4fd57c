import json

import numpy as np
import pytest

from hf_real3d._io import FormatError
from hf_real3d.geometry import Pose, yaw_from_facing
from hf_real3d.scene import Scene, SceneObject, check_scene_id, read_scannet, write_scannet


def _obj(i, label, x, y, pts=True):
    p = np.array([[x, y, 0.5, 0.5, 0.5, 0.5], [x + 0.1, y, 0.5, 0.5, 0.5, 0.5],
                  [x, y + 0.1, 0.6, 0.5, 0.5, 0.5]], dtype=np.float32)
    return SceneObject(i, label, [x, y, 0.5], [0.2, 0.2, 0.2], 0.0, {"color": "red"},
                       p if pts else None, np.array([[0, 1, 2]]))


def _scene():
    objs = [_obj(0, "floor", 0, 0), _obj(1, "chair", 2, 0), _obj(2, "table", -2, 0),
            _obj(3, "chair", 0, 3), _obj(4, "lamp", 0, -1)]
    return Scene("scene0001_00", objs)


@pytest.mark.parametrize("bad", ["../scene0001_00", "scene0001_00/..", "a/b", "scene01", "",
                                 None, "scene0001_00\n"])
def test_unsafe_scene_ids_rejected(bad, tmp_path):
    with pytest.raises(FormatError, match="scene id"):
        check_scene_id(bad)
    with pytest.raises(FormatError):
        read_scannet(tmp_path, bad)
    assert list(tmp_path.iterdir()) == []


def test_queries():
    """Where each object is from a pose: the one home, :class:`hf_real3d.spatial.View`, over
    the scene's egocentric arrays."""
    from hf_real3d.spatial import View

    scene = _scene()
    # agent at the origin facing +x: yaw such that facing = (1, 0, 0)
    view = View(scene, Pose(np.zeros(3), yaw_from_facing([1, 0, 0])), margin_deg=0.0)
    where = {view.objs[i].object_id: view.direction(i) for i in range(len(view.objs))}
    assert where == {1: "front", 2: "back", 3: "left", 4: "right"}  # the floor left out
    order = [view.objs[i] for i in np.argsort(view.dist)]
    assert order[0].label == "lamp" and order[-1].object_id == 3  # nearest, farthest
    assert next(o for o in order if o.label == "chair").object_id == 1
    assert scene.counts() == {"chair": 2, "table": 1, "lamp": 1}
    assert scene.count("floor") == 1


def test_scannet_roundtrip_synthetic(small_synth, tmp_path):
    scenes, _ = small_synth
    scene = scenes[0]
    write_scannet(scene, tmp_path)
    files = sorted(p.name for p in (tmp_path / scene.scene_id).iterdir())
    sid = scene.scene_id
    assert files == [f"{sid}.aggregation.json", f"{sid}_vh_clean_2.0.010000.segs.json",
                     f"{sid}_vh_clean_2.ply"]
    back = read_scannet(tmp_path, scene.scene_id)
    assert [o.label for o in back.objects] == [o.label for o in scene.objects]
    np.testing.assert_allclose(back.origin, scene.origin, atol=1e-5)
    for a, b in zip(scene.objects, back.objects):
        assert a.object_id == b.object_id and a.attributes == b.attributes
        np.testing.assert_allclose(b.center, a.center)
        np.testing.assert_allclose(b.size, a.size)
        assert b.yaw == pytest.approx(a.yaw)
        np.testing.assert_allclose(b.points[:, :3], a.points[:, :3], atol=1e-6)
        np.testing.assert_allclose(b.points[:, 3:], a.points[:, 3:], atol=1 / 255 + 1e-6)
        assert len(b.faces) == len(a.faces)


def test_scannet_without_extras_derives_boxes(tmp_path):
    scene = _scene()
    folder = write_scannet(scene, tmp_path)
    agg = folder / "scene0001_00.aggregation.json"
    data = json.loads(agg.read_text())
    for g in data["segGroups"]:
        for k in ("center", "size", "yaw", "attributes"):
            g.pop(k)
    agg.write_text(json.dumps(data))
    back = read_scannet(tmp_path, "scene0001_00")
    chair = back.object(1)
    np.testing.assert_allclose(chair.center, [2.05, 0.05, 0.55], atol=1e-6)
    np.testing.assert_allclose(chair.size, [0.1, 0.1, 0.1], atol=1e-6)


def test_segs_vertex_count_mismatch(tmp_path):
    folder = write_scannet(_scene(), tmp_path)
    segs = folder / "scene0001_00_vh_clean_2.0.010000.segs.json"
    data = json.loads(segs.read_text())
    data["segIndices"] = data["segIndices"][:-2]
    segs.write_text(json.dumps(data))
    with pytest.raises(FormatError, match="has 15 vertices but .* has 13 segIndices"):
        read_scannet(tmp_path, "scene0001_00")


def test_missing_file_named(tmp_path):
    folder = write_scannet(_scene(), tmp_path)
    (folder / "scene0001_00.aggregation.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing scene0001_00.aggregation.json"):
        read_scannet(tmp_path, "scene0001_00")


def test_write_failure_leaves_nothing(tmp_path):
    scene = _scene()
    scene.objects.append(_obj(9, "box", 1, 1, pts=False))
    scene = Scene(scene.scene_id, scene.objects)
    with pytest.raises(FormatError, match="object 9 \\(box\\) has no points"):
        write_scannet(scene, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("keep", [0.9, 0.66, 0.4])
def test_truncated_ply_is_an_error_not_garbage(small_synth, tmp_path, keep):
    scenes, _ = small_synth
    folder = write_scannet(scenes[0], tmp_path)
    ply = folder / f"{scenes[0].scene_id}_vh_clean_2.ply"
    raw = ply.read_bytes()
    ply.write_bytes(raw[:int(len(raw) * keep)])
    with pytest.raises(FormatError, match="truncated"):
        read_scannet(tmp_path, scenes[0].scene_id)


def test_corrupt_vertex_values_are_an_error(tmp_path):
    folder = write_scannet(_scene(), tmp_path)
    ply = folder / "scene0001_00_vh_clean_2.ply"
    raw = bytearray(ply.read_bytes())
    start = raw.index(b"end_header\n") + len(b"end_header\n")
    raw[start:start + 8] = np.array([np.nan]).tobytes()  # the first vertex's x
    ply.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match="not finite"):
        read_scannet(tmp_path, "scene0001_00")


def test_aggregation_naming_absent_segments_is_an_error(tmp_path):
    folder = write_scannet(_scene(), tmp_path)
    agg = folder / "scene0001_00.aggregation.json"
    data = json.loads(agg.read_text())
    data["segGroups"][0]["segments"] = [77]
    agg.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"refers to segment\(s\) \[77\]"):
        read_scannet(tmp_path, "scene0001_00")
