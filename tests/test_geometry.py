import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hf_real3d.geometry import (
    DIRECTIONS_4,
    Pose,
    PoseError,
    bin_margin,
    direction_bin,
    direction_names,
    facing_from_yaw,
    quaternion_from_yaw,
    turn_direction,
    yaw_from_facing,
    yaw_from_quaternion,
)

angles = st.floats(-720, 720, allow_nan=False)
xy = st.floats(-10, 10, allow_nan=False)


def _name(angle: float, n: int = 4) -> str:
    return direction_names(n)[direction_bin(angle, n)]


def test_sqa3d_facing_convention():
    # identity quaternion: the agent faces -x, its left is -y
    pose = Pose(np.zeros(3), 0.0)
    np.testing.assert_allclose(pose.facing, [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(pose.left, [0, -1, 0], atol=1e-12)
    assert _name(pose.ego_angle([-2.0, 0.0, 0.0])) == "front"
    assert _name(pose.ego_angle([0.0, -2.0, 0.0])) == "left"
    assert _name(pose.ego_angle([0.0, 2.0, 0.0])) == "right"
    assert _name(pose.ego_angle([3.0, 0.0, 0.0])) == "back"


def test_real_sqa3d_quaternion_roundtrip():
    rot = {"_x": 0, "_y": 0, "_z": -0.9995736030415032, "_w": -0.02919952230128897}
    pose = Pose.from_sqa3d({"x": 0.71, "y": -0.03, "z": 0}, rot, origin=(1.0, 2.0, 0.5))
    np.testing.assert_allclose(pose.position, [1.71, 1.97, 0.5])
    pos, rot2 = pose.to_sqa3d(origin=(1.0, 2.0, 0.5))
    q1 = np.array([rot[k] for k in ("_x", "_y", "_z", "_w")])
    q2 = np.array([rot2[k] for k in ("_x", "_y", "_z", "_w")])
    assert min(np.abs(q1 - q2).max(), np.abs(q1 + q2).max()) < 1e-9  # q and -q are one rotation
    assert pos["x"] == pytest.approx(0.71)


@pytest.mark.parametrize(
    "quat, msg",
    [([0, 0, 0.5, 0.5], "norm"), ([0.3, 0, 0, 0.9539392], "yaw-only"),
     ([0, 0, float("nan"), 1], "non-finite"), ([0, 0, 1], "4 numbers")],
)
def test_bad_quaternions_are_named_errors(quat, msg):
    with pytest.raises(PoseError, match=msg) as err:
        yaw_from_quaternion(quat, item="question_id 7")
    assert "question_id 7" in str(err.value) or msg == "4 numbers"


def test_vectorised_yaws_match_and_name_the_bad_row():
    from hf_real3d.geometry import quaternion_from_yaw, yaws_from_quaternions

    yaws = np.random.default_rng(0).uniform(-np.pi, np.pi, 200)
    q = np.array([quaternion_from_yaw(y) for y in yaws])
    q[:3, 0] = 5e-4  # within tolerance, as real files have
    items = [f"question_id {i}" for i in range(200)]
    np.testing.assert_allclose(yaws_from_quaternions(q, items),
                               [yaw_from_quaternion(x) for x in q], atol=1e-12)
    for bad, msg in (([0, 0, 0.5, 0.5], "norm"), ([0.3, 0, 0, 0.9539392], "yaw-only"),
                     ([0, 0, float("nan"), 1], "non-finite")):
        q2 = q.copy()
        q2[57] = bad
        with pytest.raises(PoseError, match=msg) as err:
            yaws_from_quaternions(q2, items)
        assert "question_id 57" in str(err.value)


def test_nan_position_rejected():
    with pytest.raises(PoseError, match="non-finite"):
        Pose.from_sqa3d({"x": float("nan"), "y": 0, "z": 0}, {"_x": 0, "_y": 0, "_z": 0, "_w": 1},
                        item="question_id 9")


@given(st.floats(-math.pi, math.pi))
def test_quaternion_yaw_roundtrip(yaw):
    back = yaw_from_quaternion(quaternion_from_yaw(yaw))
    assert abs(math.remainder(back - yaw, 2 * math.pi)) < 1e-9


@given(st.floats(-math.pi, math.pi))
def test_facing_yaw_roundtrip(yaw):
    assert abs(math.remainder(yaw_from_facing(facing_from_yaw(yaw)) - yaw, 2 * math.pi)) < 1e-9


@given(st.floats(-math.pi, math.pi), xy, xy, xy, xy)
def test_four_quarter_turns_are_identity(yaw, px, py, ox, oy):
    pose = Pose(np.array([px, py, 0.0]), yaw)
    turned = pose.turned(90).turned(90).turned(90).turned(90)
    p = np.array([ox, oy, 0.3])
    np.testing.assert_allclose(turned.to_ego(p), pose.to_ego(p), atol=1e-9)


@given(st.floats(-math.pi, math.pi), xy, xy)
def test_ego_world_roundtrip(yaw, ox, oy):
    pose = Pose(np.array([1.0, -2.0, 0.0]), yaw)
    p = np.array([ox, oy, 0.7])
    np.testing.assert_allclose(pose.to_world(pose.to_ego(p)), p, atol=1e-9)


@given(st.floats(-math.pi, math.pi), st.floats(46, 134))
def test_left_becomes_right_after_180(yaw, angle):
    pose = Pose(np.zeros(3), yaw)
    # place a point at egocentric angle `angle` (on the left)
    p = pose.to_world(np.array([math.cos(math.radians(angle)), math.sin(math.radians(angle)), 0]))
    assert _name(pose.ego_angle(p)) == "left"
    assert _name(pose.turned(180).ego_angle(p)) == "right"


@given(st.floats(-math.pi, math.pi), st.floats(-179, 179), st.sampled_from([90, 180, 270]))
def test_turning_moves_bins_like_turn_direction(yaw, angle, k):
    pose = Pose(np.zeros(3), yaw)
    p = pose.to_world(np.array([math.cos(math.radians(angle)), math.sin(math.radians(angle)), 0]))
    if bin_margin(pose.ego_angle(p)) < 1e-6:
        return
    before = _name(pose.ego_angle(p))
    after = _name(pose.turned(k).ego_angle(p))
    assert turn_direction(before, k) == after


@given(angles, st.sampled_from([4, 8, 12]))
def test_bins_partition_the_circle(angle, n):
    b = direction_bin(angle, n)
    assert 0 <= b < n
    # exactly one bin contains it: its bin's centre is within half a width
    w = 360 / n
    centres = -np.arange(n) * w
    diffs = np.abs(((angle - centres) + 180) % 360 - 180)
    inside = np.flatnonzero(diffs < w / 2 - 1e-9)
    assert inside.size <= 1
    if inside.size == 1:
        assert inside[0] == b


def test_bin_names():
    assert direction_names(4) == DIRECTIONS_4
    assert _name(-90, 12) == "3 o'clock"
    assert _name(0, 12) == "12 o'clock"
    assert _name(-45, 8) == "front-right"
    with pytest.raises(ValueError, match="multiple of 90"):
        turn_direction("left", 45)
