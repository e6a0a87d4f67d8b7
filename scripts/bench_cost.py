"""A cost model of `psle learn`: per step, how seconds and peak memory grow with the number of variables.

Reads bench_pef rows (their `steps`: seconds and peak memory while each step ran) of one problem family
at several sizes, fits seconds = a * p^b per step (a straight line in log-log) and peak memory =
c + d * n * p (the data copies grow with n * p), and predicts other sizes. With --holdout P the fit
leaves out the rows of P variables and prints its prediction for them next to what was measured.

Cores: each row also has each step's task seconds (its tasks' time on the workers, summed: the neighbour
search, member runs, fusion's screening blocks, the repair's blocks). The rows come from 2 workers, so a
step's time outside its tasks is its wall time minus half its task seconds. Both parts are fitted as power
laws; on C cores a step takes that outside time plus its task seconds / C (perfect packing of tasks: an
optimistic bound once tasks are few and long).

Usage:
  python scripts/bench_cost.py --jsonl alarm10k.jsonl alarm30k.jsonl alarm100k.jsonl --holdout 100000 \
      --predict 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

STEPS = ("partition", "selection", "estimation", "fusion", "repair")
#: Workers the rows were measured with.
MEASURED_CORES = 2


def load(paths: list[Path]) -> list[dict]:
    rows = [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("steps") and r.get("status") == "ok"]


def fit_power(ps: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    """(a, b) of y = a * p^b by least squares in log-log (b = 1 with one size)."""
    if len(set(ps.tolist())) < 2:
        return float(ys.mean() / ps.mean()), 1.0
    b, log_a = np.polyfit(np.log(ps), np.log(np.maximum(ys, 1e-3)), 1)
    return float(math.exp(log_a)), float(b)


def fit_linear(x: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    if len(set(x.tolist())) < 2:
        return 0.0, float(ys.mean() / x.mean())
    d, c = np.polyfit(x, ys, 1)
    return float(c), float(d)


def model(rows: list[dict]) -> dict[str, dict]:
    """Per step: seconds outside tasks and task seconds as (a, b) power laws, peak MB as (c, d per n * p);
    and the whole run's peak."""
    out = {}
    for step in STEPS:
        have = [r for r in rows if step in r["steps"]]
        if not have:
            continue
        p = np.array([r["p"] for r in have], dtype=float)
        wall = np.array([r["steps"][step]["seconds"] for r in have])
        task = np.array([r["steps"][step].get("task_seconds", 0.0) for r in have])
        out[step] = {"main": fit_power(p, np.maximum(wall - task / MEASURED_CORES, 0.01)),
                     "tasks": fit_power(p, np.maximum(task, 0.01)),
                     "peak_mb": fit_linear(np.array([r["p"] * r.get("n", 1000) for r in have], dtype=float),
                                           np.array([r["steps"][step]["peak_mb"] for r in have], dtype=float))}
    size = np.array([r["p"] * r.get("n", 1000) for r in rows], dtype=float)
    out["total"] = {"peak_mb": fit_linear(size, np.array([r["peak_mb"] for r in rows], dtype=float))}
    return out


def predict(m: dict[str, dict], p: int, n: int = 1000, cores: int = MEASURED_CORES) -> dict[str, tuple[float, float]]:
    """Per step (seconds, peak MB) at p variables and n rows on `cores` cores."""
    out = {}
    for step, f in m.items():
        if step == "total":
            continue
        (a, b), (a2, b2), (c, d) = f["main"], f["tasks"], f["peak_mb"]
        out[step] = (a * p**b + a2 * p**b2 / cores, c + d * n * p)
    c, d = m["total"]["peak_mb"]
    out["total"] = (sum(s for s, _ in out.values()), c + d * n * p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jsonl", type=Path, nargs="+", required=True, help="bench_pef rows with steps")
    ap.add_argument("--holdout", type=int, default=None, help="fit without the rows of this many variables")
    ap.add_argument("--predict", type=int, nargs="*", default=[1_000_000], help="sizes (variables) to predict")
    ap.add_argument("--cores", type=int, nargs="*", default=[2], help="cores to predict for")
    args = ap.parse_args()
    rows = load(args.jsonl)
    if not rows:
        raise SystemExit("no bench_pef rows with per-step figures in those files")
    held = [r for r in rows if args.holdout is not None and abs(r["p"] - args.holdout) < 0.01 * args.holdout]
    m = model([r for r in rows if r not in held])
    sizes = sorted({r["p"] for r in rows if r not in held})
    print(f"fitted on {len(rows) - len(held)} runs, sizes {', '.join(map(str, sizes))}\n")
    print("| step | outside tasks: s ~ p^b, b | tasks: s ~ p^b, b | peak MB ~ c + d n p: d (bytes per value) |\n"
          "|---|---|---|---|")
    for step, f in m.items():
        if step != "total":
            print(f"| {step} | {f['main'][1]:.2f} | {f['tasks'][1]:.2f} | {f['peak_mb'][1] * 2**20:.1f} |")
    print(f"| whole run (peak) | | | {m['total']['peak_mb'][1] * 2**20:.1f} |")
    for r in held:
        got = predict(m, r["p"], r.get("n", 1000))
        print(f"\nheld out: {r['p']} variables, predicted against measured (2 cores)\n")
        print("| step | seconds predicted | measured | peak MB predicted | measured |\n|---|---|---|---|---|")
        for step, (s, mb) in got.items():
            real = r["steps"].get(step) if step != "total" else {"seconds": r["seconds"], "peak_mb": r["peak_mb"]}
            if real:
                print(f"| {step} | {s:.0f} | {real['seconds']:.0f} | {mb:.0f} | {real['peak_mb']:.0f} |")
    for p in args.predict:
        for cores in args.cores:
            got = predict(m, p, cores=cores)
            print(f"\npredicted: {p} variables, 1,000 rows, {cores} cores: {got['total'][0] / 3600:.1f} h, "
                  f"peak {got['total'][1] / 1024:.1f} GB (" + ", ".join(
                      f"{step} {s / 3600:.2f} h" for step, (s, _) in got.items() if step != "total") + ")")


if __name__ == "__main__":
    main()
