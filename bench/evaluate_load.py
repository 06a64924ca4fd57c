"""How long ``evaluate.load(hf_real3d.metric_path(name))`` takes, cold (fresh modules
cache) and warm, each in a fresh process, against ``import evaluate`` alone measured the
same way (evaluate itself imports transformers' pipelines: not this library's cost).

Target (issue 13): a warm load under 5 s.

    python bench/evaluate_load.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import report

CODE = """
import json, time
t0 = time.perf_counter()
import evaluate, hf_real3d
t1 = time.perf_counter()
for name in hf_real3d.METRICS:
    evaluate.load(hf_real3d.metric_path(name))
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1}))
"""


def run(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, HF_EVALUATE_OFFLINE="1", HF_HUB_OFFLINE="1",
                   HF_MODULES_CACHE=str(Path(tmp) / "modules"))
        cold = run(env)
        warm = [run(env) for _ in range(2)]
    w = min(x["load"] for x in warm)
    imp = min(x["import"] for x in warm)
    print(f"  import evaluate + hf_real3d: {imp:.2f} s; load of the 3 modules: cold "
          f"{cold['load']:.2f} s, warm {w:.2f} s")
    report("evaluate.load of 3 metric modules, warm", w, "s", baseline=imp,
           target="< 5 s", ok=w < 5.0, cold_s=round(cold["load"], 3))
    report("import evaluate (evaluate's own cost)", imp, "s")


if __name__ == "__main__":
    main()
