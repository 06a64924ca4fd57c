"""Render speed (512x512) and the time to build the default synthetic 3DSRBench splits.

Targets (3DSRBench issue): report images per second at 512x512; the default synthetic
split (a few hundred questions per viewpoint kind) builds in under 5 minutes. Baseline in
the same run: one process rendering the frames of a single scene (no per-scene process).

    python bench/render.py [--scenes 90]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

from hf_real3d.synth.render import Camera, Renderer, scene_mesh_arrays  # noqa: E402
from hf_real3d.synth.rooms import generate_room  # noqa: E402
from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=SRBenchConfig().scenes)
    args = ap.parse_args()
    r = Renderer(512, 512)
    scene = generate_room("srb0000_00", np.random.default_rng(0))
    r.set_mesh(scene_mesh_arrays(scene))
    w, d, _ = scene.extras["room_size"]
    cams = [Camera((0.5, 0.5 + 0.1 * k, 1.6), np.arctan2(d / 2 - 0.5, w / 2 - 0.5), -0.2)
            for k in range(20)]
    r.render(cams[0])  # warm-up
    t0 = time.perf_counter()
    for c in cams:
        r.render(c)
    per = (time.perf_counter() - t0) / len(cams)
    print(f"render 512x512: {per * 1000:.0f} ms/frame, {1 / per:.1f} images/s")
    t0 = time.perf_counter()
    out = generate_srbench(SRBenchConfig(scenes=args.scenes), progress=False)
    build = time.perf_counter() - t0
    n = out["stats"]["questions_per_kind"]
    frames = 2 * len({r["qid"].rsplit("-", 1)[0] + r["qid"][-3] for r in
                      out["synthetic_common"]})
    print(f"synthetic 3DSRBench: {args.scenes} scenes, {n} questions per viewpoint kind, "
          f"{build:.1f} s")
    report("render 512x512 images per second", 1 / per, "img/s", ms_per_frame=round(per * 1e3))
    report("synthetic 3DSRBench default build", build, "s", baseline=per * max(frames, 1),
           target="< 300 s", ok=build < 300, questions_per_kind=n)


if __name__ == "__main__":
    main()
