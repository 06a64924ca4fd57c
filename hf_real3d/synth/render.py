"""Pinhole cameras and headless RGB renders of procedural scenes (open3d).

Camera frame (OpenCV): x right, y down, z forward. A camera is placed by its position,
``yaw`` (heading of the forward axis about world z, 0 = +x), ``pitch`` (elevation of the
forward axis, + looks up) and ``roll`` (right-handed rotation about the forward axis;
:meth:`Camera.measured` recovers all three from the extrinsic matrix).

Rendering uses open3d's ``OffscreenRenderer`` with Vulkan (Debian ``libvulkan1`` +
``mesa-vulkan-drivers``) and post-processing off, which keeps colours exact
(``bench/render.py`` measures the rendering speed).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy.spatial.transform import Rotation

from hf_real3d._extras import require
from hf_real3d.scene import Scene

__all__ = ["Camera", "Renderer", "scene_mesh_arrays", "png_bytes"]

# base camera looking along world +x with world z up: columns = cam x, y, z in world
_BASE = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


@dataclass(frozen=True)
class Camera:
    """A pinhole camera: position, yaw, pitch, roll (degrees), image size and field of view."""
    position: tuple[float, float, float]
    yaw: float
    pitch: float = 0.0
    roll: float = 0.0
    width: int = 512
    height: int = 512
    hfov_deg: float = 70.0

    @property
    def focal(self) -> float:
        return (self.width / 2) / math.tan(math.radians(self.hfov_deg) / 2)

    def intrinsic(self) -> np.ndarray:
        f = self.focal
        return np.array([[f, 0, self.width / 2], [0, f, self.height / 2], [0, 0, 1.0]])

    def world_from_cam(self) -> np.ndarray:
        """3x3 rotation whose columns are the camera axes in world coordinates."""
        r = (Rotation.from_euler("z", self.yaw) * Rotation.from_euler("y", -self.pitch)
             * Rotation.from_euler("x", self.roll)).as_matrix()
        return r @ _BASE

    def extrinsic(self) -> np.ndarray:
        """4x4 world -> camera transform."""
        r = self.world_from_cam().T
        e = np.eye(4)
        e[:3, :3] = r
        e[:3, 3] = -r @ np.asarray(self.position)
        return e

    def project(self, points: np.ndarray) -> np.ndarray:
        """(N, 3) world points -> (N, 3) pixel u, v and depth."""
        p = np.asarray(points, float).reshape(-1, 3)
        cam = (self.extrinsic()[:3, :3] @ p.T).T + self.extrinsic()[:3, 3]
        uv = (self.intrinsic() @ cam.T).T
        return np.column_stack([uv[:, 0] / uv[:, 2], uv[:, 1] / uv[:, 2], cam[:, 2]])

    def measured(self) -> dict[str, float]:
        """Roll, pitch (degrees) and height recovered from the extrinsic matrix."""
        r = self.world_from_cam()
        x, z = r[:, 0], r[:, 2]
        pitch = math.degrees(math.asin(np.clip(z[2], -1, 1)))
        # roll: angle of the image x axis below the horizontal, about the forward axis
        horiz = np.cross(z, [0, 0, 1.0])
        horiz = horiz / (np.linalg.norm(horiz) + 1e-12)
        roll = math.degrees(math.atan2(np.dot(np.cross(horiz, x), z), np.dot(horiz, x)))
        return {"roll": roll, "pitch": pitch, "height": float(self.position[2])}


def scene_mesh_arrays(scene: Scene, skip_labels=("ceiling",)) -> tuple[np.ndarray, ...]:
    """Vertices, vertex colours and triangles of the whole scene."""
    verts, cols, tris, off = [], [], [], 0
    for o in scene.objects:
        if o.label in skip_labels or o.points is None or o.faces is None:
            continue
        verts.append(o.points[:, :3].astype(np.float64))
        cols.append(o.points[:, 3:6].astype(np.float64))
        tris.append(np.asarray(o.faces) + off)
        off += len(o.points)
    return np.concatenate(verts), np.concatenate(cols), np.concatenate(tris)


class Renderer:
    """Reusable offscreen renderer (creating one costs more than a frame)."""

    def __init__(self, width: int = 512, height: int = 512):
        require("open3d", what="rendering scenes")
        # open3d's renderer (the [scenes] extra) needs Vulkan; loaded only in the processes
        # that render
        from open3d.visualization import rendering

        self._rendering = rendering
        self.width, self.height = width, height
        self.r = rendering.OffscreenRenderer(width, height)
        self.r.scene.set_background([1.0, 1.0, 1.0, 1.0])
        self.r.scene.view.set_post_processing(False)
        self.r.scene.view.set_shadowing(False)
        self.r.scene.scene.enable_sun_light(False)
        self.mat = rendering.MaterialRecord()
        self.mat.shader = "defaultUnlit"
        self._count = 0

    def set_mesh(self, arrays: tuple[np.ndarray, ...]) -> None:
        # open3d: see above
        import open3d as o3d

        v, c, t = arrays
        mesh = o3d.geometry.TriangleMesh(o3d.utility.Vector3dVector(v),
                                         o3d.utility.Vector3iVector(t.astype(np.int32)))
        mesh.vertex_colors = o3d.utility.Vector3dVector(np.clip(c, 0, 1))
        # Measured on llvmpipe: removing geometry (clear/remove) makes later renders take
        # 15-140 s instead of 0.1 s, so earlier meshes are hidden, never removed.
        if self._count:
            self.r.scene.show_geometry(f"mesh{self._count - 1}", False)
        self.r.scene.add_geometry(f"mesh{self._count}", mesh, self.mat)
        self._count += 1

    def render(self, camera: Camera) -> np.ndarray:
        """(H, W, 3) uint8 image of the loaded mesh."""
        if (camera.width, camera.height) != (self.width, self.height):
            raise ValueError(f"camera is {camera.width}x{camera.height} but the renderer is "
                             f"{self.width}x{self.height}")
        self.r.setup_camera(camera.intrinsic(), camera.extrinsic(), self.width, self.height)
        return np.asarray(self.r.render_to_image()).copy()


def png_bytes(image: np.ndarray) -> bytes:
    """An RGB image array encoded as PNG bytes, at zlib level 1: the same pixels as PIL's
    default level 6, encoded several times faster, in somewhat larger files."""
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()
