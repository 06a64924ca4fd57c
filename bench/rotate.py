"""Rotation speed: 3,519 synthetic questions into 3 extra viewpoints.

Target (Real-3DQA issue): under 5 s on the 2-core machine. Baseline in the same run:
recomputing the 3,519 original answers only (one viewpoint), so the ratio shows the cost
per extra viewpoint.

    python bench/rotate.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

from hf_real3d.real3dqa import rotate_records  # noqa: E402
from hf_real3d.synth import SynthConfig, generate_split  # noqa: E402


def main() -> None:
    cfg = SynthConfig(seed=0, scenes={"test": 40}, questions_per_scene={"test": 88})
    scenes, records = generate_split(cfg, "test")
    records = records[:3519]
    by_id = {s.scene_id: s for s in scenes}
    t0 = time.perf_counter()
    rotate_records(records, by_id, n_viewpoints=1)
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = rotate_records(records, by_id, n_viewpoints=4)
    dt = time.perf_counter() - t0
    s = res.stats()
    print(f"rotate {len(records)} questions x 4 viewpoints: {dt:.2f} s "
          f"(1 viewpoint: {base:.2f} s); kept {s['kept']}, excluded {s['excluded']}")
    report("rotate 3519 questions into 4 viewpoints", dt, "s", baseline=base, target="< 5 s",
           ok=dt < 5.0, kept=s["kept"], excluded=s["excluded"])


if __name__ == "__main__":
    main()
