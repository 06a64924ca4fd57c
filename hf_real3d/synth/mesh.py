"""Surface meshes for procedural objects: gridded boxes and cylinders with vertex colours.

The mesh vertices double as the object's point cloud (xyz + rgb in [0, 1]), the way a
ScanNet ``*_vh_clean_2.ply`` mesh is used as a point cloud by 3D-LLMs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_mesh", "cylinder_mesh", "object_mesh"]


def _grid(nu: int, nv: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit-square grid vertices (u, v) in [0, 1]^2 and its triangles."""
    u, v = np.meshgrid(np.linspace(0, 1, nu + 1), np.linspace(0, 1, nv + 1), indexing="ij")
    uv = np.stack([u.ravel(), v.ravel()], axis=1)
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    a = (i * (nv + 1) + j).ravel()
    b, c, d = a + nv + 1, a + 1, a + nv + 2
    tris = np.concatenate([np.stack([a, b, c], 1), np.stack([c, b, d], 1)])
    return uv, tris


def _cells(length: float, spacing: float) -> int:
    return max(1, int(np.ceil(length / spacing)))


def box_mesh(size: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """A box centred at the origin: gridded faces, vertices (N, 3) and triangles (F, 3)."""
    sx, sy, sz = (float(s) for s in size)
    verts, tris, off = [], [], 0
    # (fixed axis, sign, axis u, axis v)
    for axis, sign in ((0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1)):
        au, av = [a for a in range(3) if a != axis]
        lu, lv = (sx, sy, sz)[au], (sx, sy, sz)[av]
        uv, t = _grid(_cells(lu, spacing), _cells(lv, spacing))
        p = np.zeros((len(uv), 3))
        p[:, axis] = sign * (sx, sy, sz)[axis] / 2
        p[:, au] = (uv[:, 0] - 0.5) * lu
        p[:, av] = (uv[:, 1] - 0.5) * lv
        verts.append(p)
        tris.append(t + off)
        off += len(p)
    return np.concatenate(verts), np.concatenate(tris)


def cylinder_mesh(size: np.ndarray, spacing: float) -> tuple[np.ndarray, np.ndarray]:
    """A vertical elliptic cylinder centred at the origin (side grid plus two caps)."""
    rx, ry, h = float(size[0]) / 2, float(size[1]) / 2, float(size[2])
    n_theta = max(8, _cells(np.pi * (rx + ry), spacing))
    n_h = _cells(h, spacing)
    uv, t = _grid(n_theta, n_h)
    theta = uv[:, 0] * 2 * np.pi
    side = np.stack([rx * np.cos(theta), ry * np.sin(theta), (uv[:, 1] - 0.5) * h], 1)
    verts, tris, off = [side], [t], len(side)
    n_r = _cells(max(rx, ry), spacing)
    for z in (h / 2, -h / 2):
        uv, t = _grid(n_theta, n_r)
        th, r = uv[:, 0] * 2 * np.pi, uv[:, 1]
        cap = np.stack([r * rx * np.cos(th), r * ry * np.sin(th), np.full(len(th), z)], 1)
        verts.append(cap)
        tris.append(t + off)
        off += len(cap)
    return np.concatenate(verts), np.concatenate(tris)


def object_mesh(center: np.ndarray, size: np.ndarray, yaw: float, rgb: tuple[int, int, int],
                rng: np.random.Generator, *, round_shape: bool = False, spacing: float = 0.1
                ) -> tuple[np.ndarray, np.ndarray]:
    """Points (N, 6) float32 (xyz + rgb in [0, 1], colours quantised to 8 bits) and faces."""
    verts, tris = (cylinder_mesh if round_shape else box_mesh)(np.asarray(size), spacing)
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    xyz = verts @ rot.T + np.asarray(center)
    noise = rng.integers(-12, 13, size=(len(xyz), 3))
    col = np.clip(np.asarray(rgb)[None, :] + noise, 0, 255).astype(np.float32) / 255.0
    pts = np.concatenate([xyz.astype(np.float32), col], axis=1)
    return pts, tris.astype(np.int64)
