"""Render speed (512x512) and the time to build the default synthetic 3DSRBench splits.

Targets: report images per second at 512x512 (3DSRBench issue); the default synthetic
split (a few hundred questions per viewpoint kind) builds in at most 6x the time of
rendering its frames alone, measured in the same run (one process rendering the frames
of a single scene), so rooms, questions, PNG encoding and writing cost at most 5x the
rendering. (The 3DSRBench issue's "under 5 minutes" depends on the machine; issue 13 asks
for ratios.)

    python bench/render.py [--scenes 90]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import report

from hf_real3d.synth.render import Camera, Renderer, scene_mesh_arrays
from hf_real3d.synth.rooms import generate_room
from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench


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
    base = per * max(frames, 1)
    report("synthetic 3DSRBench build / rendering alone", build / base, "x", target="<= 6x",
           ok=build / base <= 6, seconds=round(build, 1), baseline_seconds=round(base, 1),
           questions_per_kind=n)


if __name__ == "__main__":
    main()
