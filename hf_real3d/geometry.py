"""Poses and egocentric directions in SQA3D's conventions.

Conventions:

* World frame: z up, metres. SQA3D stores an agent pose as ``position`` (relative to the
  centre of the raw mesh's axis-aligned bounding box, the *origin*) and a yaw-only
  quaternion ``rotation`` in ``(x, y, z, w)`` order.
* The agent **faces** ``R(q) @ (-1, 0, 0)``; SQA3D's own visualiser draws its arrow along
  local ``-x``.
* Egocentric frame: ``x`` forward, ``y`` to the agent's left, ``z`` up. An egocentric
  angle is measured counter-clockwise seen from above: 0 = front, +90 = left,
  +-180 = back, -90 = right.
* Turning the agent by ``k`` degrees *clockwise* seen from above (to its right) is
  ``yaw - k``; every object's egocentric angle then grows by ``k``.

All rotation maths goes through :class:`scipy.spatial.transform.Rotation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.spatial.transform import Rotation


def _rotation() -> type[Rotation]:
    # scipy.spatial costs 0.15 s to import: paid by the commands that turn poses, not by
    # every import of this module (hf-real3d evaluate against cached references)
    from scipy.spatial.transform import Rotation

    return Rotation


__all__ = ["DIRECTION_MIN_DISTANCE", "EQUALLY_NEAR", "CLEARLY_NEARER", "MARGIN_DEG",
           "DIRECTION_WORDS", "FACING_HALF_ANGLE", "FACING_MIN_DISTANCE", "DIRECTIONS_4",
           "DIRECTIONS_8", "PoseError", "Pose", "quaternion_from_yaw", "yaw_from_quaternion",
           "yaws_from_quaternions", "facing_from_yaw", "yaw_from_facing", "wrap_degrees",
           "angle_gap", "direction_bin", "direction_names", "bin_margin", "turn_direction",
           "bearing_after_turn", "direction_bearing", "DIRECTION_PHRASES"]

# Clockwise from the front, as the bins are numbered.
DIRECTIONS_4: tuple[str, ...] = ("front", "right", "back", "left")

# Where an object is from a pose, in named distances (metres, horizontal) that every step
# uses alike: the rotation from geometry (spatial), the checker's scene rules, the renders
# and the synthetic generator.
#: nearer than this, an object has no direction: it is where the agent stands
DIRECTION_MIN_DISTANCE = 0.4
#: the object the agent faces is at least this far ...
FACING_MIN_DISTANCE = 0.6
#: ... and within this many degrees of straight ahead
FACING_HALF_ANGLE = 25.0
#: "the nearest X in a direction" is one object only when the next is at least this much
#: farther (else the two are about as near)
EQUALLY_NEAR = 0.3
#: "which is nearer, X or Y?" is asked and answered only when their distances differ by at
#: least this (the generator's and the geometry route's one threshold; making it
#: EQUALLY_NEAR's 0.3 changes the synthetic questions of demo seed 0)
CLEARLY_NEARER = 0.5
#: degrees: an object within this of a direction boundary never decides a direction
MARGIN_DEG = 15.0
DIRECTIONS_8: tuple[str, ...] = ("front", "front-right", "right", "back-right", "back",
                                  "back-left", "left", "front-left")
# How SQA3D-style text names the four directions.
DIRECTION_PHRASES: dict[str, str] = {"front": "in front of me", "right": "on my right",
                                     "back": "behind me", "left": "on my left"}
#: the one table of direction words, by style: geometry's names, a side ("behind"), a way to
#: go ("backward"), SQA3D's phrase ("behind me") and a phrase with "to" ("to my right")
DIRECTION_WORDS: dict[str, dict[str, str]] = {
    "name": {d: d for d in DIRECTIONS_4},
    "side": {"front": "front", "right": "right", "back": "behind", "left": "left"},
    "go": {"front": "forward", "right": "right", "back": "backward", "left": "left"},
    "phrase": DIRECTION_PHRASES,
    "to": {"front": "in front of me", "right": "to my right", "back": "behind me",
           "left": "to my left"},
}
_AGENT_FORWARD_LOCAL = np.array([-1.0, 0.0, 0.0])


class PoseError(ValueError):
    """A pose that breaks SQA3D's conventions (non-unit or non-yaw quaternion, NaN)."""


def _check_finite(values: Sequence[float], what: str, item: str | None) -> None:
    if not all(math.isfinite(float(v)) for v in values):
        where = f"{item}: " if item else ""
        raise PoseError(f"{where}{what} has a non-finite value {list(values)}; "
                        "fix the annotation or drop the item")


def quaternion_from_yaw(yaw: float) -> np.ndarray:
    """The yaw-only ``(x, y, z, w)`` quaternion for a rotation of ``yaw`` radians about z."""
    return _rotation().from_euler("z", yaw).as_quat()


def yaw_from_quaternion(quat: Sequence[float] | Mapping[str, float], *, item: str | None = None,
                        atol: float = 1e-3) -> float:
    """Yaw in radians of a yaw-only quaternion given as ``(x, y, z, w)`` or SQA3D's dict.

    Raises :class:`PoseError` naming ``item`` when the quaternion is not unit length or
    rotates about anything other than z (both beyond ``atol``).
    """
    if isinstance(quat, Mapping):
        try:
            quat = [quat["_x"], quat["_y"], quat["_z"], quat["_w"]]
        except KeyError as err:
            where = f"{item}: " if item else ""
            raise PoseError(f"{where}rotation lacks key {err.args[0]!r}; expected SQA3D's "
                            "{'_x', '_y', '_z', '_w'}") from None
    q = np.asarray(quat, dtype=float)
    where = f"{item}: " if item else ""
    if q.shape != (4,):
        raise PoseError(f"{where}expected a quaternion of 4 numbers (x, y, z, w) but got {quat!r}")
    _check_finite(q, "rotation", item)
    norm = float(np.linalg.norm(q))
    if abs(norm - 1.0) > atol:
        raise PoseError(f"{where}rotation quaternion has norm {norm:.6f}, expected 1; "
                        "normalise it or fix the annotation")
    if abs(q[0]) > atol or abs(q[1]) > atol:
        raise PoseError(
            f"{where}rotation quaternion is not yaw-only (x={q[0]:.4f}, y={q[1]:.4f}); "
            "SQA3D poses rotate about z only: fix the annotation or drop the item")
    return float(_rotation().from_quat(q / norm).as_euler("ZYX")[0])


def yaws_from_quaternions(quats: np.ndarray, items: Sequence[str], *,
                          atol: float = 1e-3) -> np.ndarray:
    """Yaws in radians of many yaw-only ``(x, y, z, w)`` quaternions (an ``(n, 4)`` array),
    checked as :func:`yaw_from_quaternion` checks one; an error names ``items[i]`` of the
    first bad row. Same values as the one-at-a-time function, without a SciPy call per
    row."""
    q = np.asarray(quats, dtype=float).reshape(-1, 4)
    bad = ~np.isfinite(q).all(axis=1)
    norm = np.linalg.norm(np.where(bad[:, None], 0.0, q), axis=1)
    bad |= np.abs(norm - 1.0) > atol
    bad |= (np.abs(q[:, 0]) > atol) | (np.abs(q[:, 1]) > atol)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        yaw_from_quaternion(q[i], item=items[i], atol=atol)  # raises the precise error
    x, y, z, w = (q / norm[:, None]).T
    return np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def facing_from_yaw(yaw: float) -> np.ndarray:
    """Unit vector the agent faces: ``R(yaw) @ (-1, 0, 0)``."""
    return _rotation().from_euler("z", yaw).apply(_AGENT_FORWARD_LOCAL)


def yaw_from_facing(direction: Sequence[float]) -> float:
    """Yaw whose facing vector points along ``direction`` (its xy part), in ``(-pi, pi]``."""
    d = np.asarray(direction, dtype=float)
    heading = math.atan2(d[1], d[0])
    return _wrap_radians(heading - math.pi)


def _wrap_radians(a: float) -> float:
    a = math.remainder(a, 2 * math.pi)
    return math.pi if a == -math.pi else a


def wrap_degrees(a: np.ndarray | float) -> np.ndarray | float:
    """Wrap angles to ``(-180, 180]``."""
    w = -((180.0 - np.asarray(a, dtype=float)) % 360.0) + 180.0
    return float(w) if np.ndim(w) == 0 else w


@dataclass(frozen=True)
class Pose:
    """An agent on the floor: world ``position`` (3,) and ``yaw`` in radians."""

    position: np.ndarray
    yaw: float

    def __post_init__(self) -> None:
        pos = np.asarray(self.position, dtype=float).reshape(3)
        _check_finite(pos, "position", None)
        object.__setattr__(self, "position", pos)
        object.__setattr__(self, "yaw", _wrap_radians(float(self.yaw)))

    # --- SQA3D I/O -------------------------------------------------------------------
    @classmethod
    def from_sqa3d(cls, position: Mapping[str, float], rotation: Mapping[str, float],
                   origin: Sequence[float] = (0.0, 0.0, 0.0), *, item: str | None = None
                   ) -> Pose:
        """Pose from SQA3D's ``position``/``rotation`` dicts; ``origin``: mesh box centre."""
        try:
            rel = [float(position["x"]), float(position["y"]), float(position["z"])]
        except (KeyError, TypeError, ValueError):
            where = f"{item}: " if item else ""
            raise PoseError(f"{where}position {position!r} is not SQA3D's {{'x', 'y', 'z'}} "
                            "of numbers") from None
        _check_finite(rel, "position", item)
        yaw = yaw_from_quaternion(rotation, item=item)
        return cls(np.asarray(rel) + np.asarray(origin, dtype=float), yaw)

    def to_sqa3d(self, origin: Sequence[float] = (0.0, 0.0, 0.0)
                 ) -> tuple[dict[str, float], dict[str, float]]:
        """SQA3D's ``(position, rotation)`` dicts relative to ``origin``."""
        rel = self.position - np.asarray(origin, dtype=float)
        x, y, z, w = quaternion_from_yaw(self.yaw)
        return ({"x": float(rel[0]), "y": float(rel[1]), "z": float(rel[2])},
                {"_x": float(x), "_y": float(y), "_z": float(z), "_w": float(w)})

    # --- frames ----------------------------------------------------------------------
    @property
    def facing(self) -> np.ndarray:
        return facing_from_yaw(self.yaw)

    @property
    def left(self) -> np.ndarray:
        f = self.facing
        return np.array([-f[1], f[0], 0.0])

    def _world_from_ego(self) -> Rotation:
        # ego x (forward) = facing = R(yaw) @ (-1,0,0) = R(yaw + pi) @ (1,0,0)
        return _rotation().from_euler("z", self.yaw + math.pi)

    def to_ego(self, points: np.ndarray) -> np.ndarray:
        """World points (N, 3) or (3,) -> egocentric (x forward, y left, z up)."""
        p = np.asarray(points, dtype=float)
        return self._world_from_ego().inv().apply(p - self.position)

    def to_world(self, ego_points: np.ndarray) -> np.ndarray:
        """Egocentric points -> world points; inverse of :meth:`to_ego`."""
        return self._world_from_ego().apply(np.asarray(ego_points, dtype=float)) + self.position

    def ego_angle(self, points: np.ndarray) -> np.ndarray | float:
        """Egocentric angle in degrees, ``(-180, 180]``: 0 front, +90 left, -90 right."""
        e = self.to_ego(points)
        a = np.degrees(np.arctan2(e[..., 1], e[..., 0]))
        return wrap_degrees(a)

    def distance(self, points: np.ndarray) -> np.ndarray | float:
        """Horizontal (xy) distance from the agent."""
        d = np.asarray(points, dtype=float)[..., :2] - self.position[:2]
        r = np.linalg.norm(d, axis=-1)
        return float(r) if np.ndim(r) == 0 else r

    def turned(self, degrees_clockwise: float) -> Pose:
        """The same agent turned in place ``degrees_clockwise`` seen from above."""
        return Pose(self.position, self.yaw - math.radians(degrees_clockwise))


def angle_gap(a: float, b: float) -> float:
    """The unsigned difference of two angles in degrees, 0 to 180."""
    return abs(float(wrap_degrees(float(a) - float(b))))


def direction_bin(angle_deg: np.ndarray | float, n: int = 4) -> np.ndarray | int:
    """Index of the ``n``-way bin holding an egocentric angle, clockwise from the front.

    Bin ``i`` covers clockwise angles ``[i*w - w/2, i*w + w/2)`` with ``w = 360/n``, so
    the bins partition the circle: with ``n=4`` 0 front, 1 right, 2 back, 3 left; with
    ``n=12`` bin ``i`` is ``i`` o'clock (0 = 12 o'clock).
    """
    if n < 1:
        raise ValueError(f"Expected a positive number of bins but got n={n}")
    w = 360.0 / n
    cw = -np.asarray(angle_deg, dtype=float)
    idx = np.floor(((cw + w / 2.0) % 360.0) / w).astype(int) % n
    return int(idx) if np.ndim(idx) == 0 else idx


def bin_margin(angle_deg: np.ndarray | float, n: int = 4) -> np.ndarray | float:
    """Degrees from ``angle_deg`` to the nearest bin boundary (how unambiguous a bin is)."""
    w = 360.0 / n
    cw = (-np.asarray(angle_deg, dtype=float) + w / 2.0) % w
    m = np.minimum(cw, w - cw)
    return float(m) if np.ndim(m) == 0 else m


def direction_names(n: int = 4) -> tuple[str, ...]:
    """Names of the ``n`` bins, clockwise from the front."""
    if n == 4:
        return DIRECTIONS_4
    if n == 8:
        return DIRECTIONS_8
    if n == 12:
        return tuple(f"{12 if i == 0 else i} o'clock" for i in range(12))
    return tuple(f"sector {i}" for i in range(n))


def bearing_after_turn(bearing_deg: float, degrees_clockwise: float) -> float:
    """Where something seen at clockwise ``bearing_deg`` (0 front, 90 right, 180 behind, 270
    left; a clock hour ``h`` is ``30 h``) is seen after the agent turns ``degrees_clockwise``
    in place: ``(bearing - turn) mod 360``. A 90-degree turn to the right sends front to left,
    right to front, behind to right and left to behind; clock hours move ``turn / 30`` hours
    back (12 o'clock to 9 o'clock). The one statement of that rule: the geometry route
    (:func:`turn_direction`) and the rotation checker (:mod:`hf_real3d.real3dqa.checker.text`)
    both use it."""
    return float((float(bearing_deg) - float(degrees_clockwise)) % 360.0)


def direction_bearing(direction: str, n: int = 4) -> float:
    """Clockwise bearing in degrees of a direction name of :func:`direction_names` ``(n)``."""
    names = direction_names(n)
    if direction not in names:
        raise ValueError(f"Expected a direction in {names} but got {direction!r}")
    return names.index(direction) * 360.0 / n


def turn_direction(direction: str, degrees_clockwise: float, n: int = 4) -> str:
    """Where something seen in ``direction`` appears after the agent turns clockwise.

    The agent turning right by 90 degrees moves an object from its left to its back.
    ``degrees_clockwise`` must be a multiple of the bin width ``360/n``.
    """
    w = 360.0 / n
    steps = degrees_clockwise / w
    if abs(steps - round(steps)) > 1e-9:
        raise ValueError(
            f"Turning by {degrees_clockwise} degrees does not map {n} bins onto each other; "
            f"use a multiple of {w:g}")
    after = bearing_after_turn(direction_bearing(direction, n), degrees_clockwise)
    return direction_names(n)[int(round(after / w)) % n]
