"""What one experiment task does: learn (and score) one method on one dataset and seed, or train.

Results are files: `<results_dir>/<method>/<dataset>/seed<k>.json` (metrics and timings) and
`seed<k>.graph.json` (the graph) or, for a run that ended without one, `seed<k>.runs.json` (how far
it got), all renamed into place when complete. A task whose result already exists returns at
once, so re-submitting a sweep only runs what is missing.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from hpc.atomic import write_text_atomic
from hpc.errors import PsleError
from hpc.jsontext import dumps


# How the generated data's settings appear in a result's folder name when they differ from the family's
# shipped config (conf/dataset/<kind>.yaml): `er-1000-n300` is er-1000 with 300 samples.
SHORT = {"samples": "n", "order": "order-", "edges_per_node": "epn", "rewire": "rewire", "weights": "w"}


def data_settings(ds: Any) -> dict[str, Any]:
    """The settings that shape a generated dataset beyond its network and size, as `load_dataset` uses them."""
    from hpc.data.generate import WEIGHTS, check_weights

    out = {"samples": ds.samples, "weights": list(check_weights(ds.get("weights", WEIGHTS)))}
    if ds.kind == "bnlearn":
        out["order"] = str(ds.get("order", "shuffled"))
    else:
        out["edges_per_node"] = ds.get("edges_per_node", 2)
        if ds.kind == "ws":
            out["rewire"] = ds.get("rewire", 0.1)
    return out


def _tag_value(v: Any) -> str:
    return "-".join(map(_tag_value, v)) if isinstance(v, list) else f"{v:g}" if isinstance(v, float) else str(v)


def dataset_tag(ds: Any) -> str:
    """The dataset's folder in results: its network and size, plus every data setting that differs from
    the family's shipped config, so that a sweep over `dataset.samples` (say) gets one folder per value
    instead of finding the first value's result and skipping the rest."""
    if ds.kind == "file":
        return Path(ds.path).stem
    from omegaconf import OmegaConf

    from hpc.learners.ensemble import conf_dir

    shipped_file = conf_dir() / "dataset" / f"{ds.kind}.yaml"
    shipped = data_settings(OmegaConf.load(shipped_file)) if shipped_file.is_file() else {}
    extra = [f"{SHORT[k]}{_tag_value(v)}" for k, v in data_settings(ds).items() if shipped.get(k) != v]
    return "-".join([f"{ds.network}-{ds.nodes}", *extra])


def method_label(cfg: Any) -> str:
    """The method's name in results; `selection=predicted` on a method config without its own selection
    (`method=p-sle selection=predicted selector=bic`) is told apart as `p-sle-bic[-top<k>]`."""
    if cfg.method.get("selection") is not None or cfg.get("selection", "all") == "all":
        return cfg.method.name
    top_k = cfg.get("top_k", 1)
    return f"{cfg.method.name}-{Path(str(cfg.selector)).stem}" + (f"-top{top_k}" if top_k != 1 else "")


def result_path(cfg: Any) -> Path:
    return Path(cfg.results_dir) / method_label(cfg) / dataset_tag(cfg.dataset) / f"seed{cfg.seed}.json"


def load_dataset(ds: Any, seed: int):
    """(data, variables, true DAG or None) for a dataset config."""
    if ds.kind == "file":
        from hpc.data.problem import read_problem
        from hpc.data.tabular import read_data

        if str(ds.path).endswith((".h5", ".hdf5")):
            problem = read_problem(ds.path)
            return problem.data, problem.variables, problem.truth
        x, names = read_data(ds.path)
        return x, names, None
    from hpc.data.generate import benchmark_problem

    if ds.kind == "bnlearn":
        problem = benchmark_problem(ds.nodes, seed, network=ds.network, **data_settings(ds))
    else:
        problem = benchmark_problem(ds.nodes, seed, graph=ds.kind, **data_settings(ds))
    return problem.data, problem.variables, problem.truth


def method_spec(cfg: Any):
    """The run path's MethodSpec for a task: the method config, the selection keys and PEF settings."""
    from hpc.run import MethodSpec

    method = cfg.method
    members = tuple(dict(m) for m in method.members) if method.get("members") else None
    options = dict(cfg.get("pef_options") or {})
    return MethodSpec(method_label(cfg), bool(method.pef), members=members, sle=method.get("sle"),
                      pef_options=options if method.pef else {}, **selection_settings(cfg))


def selection_settings(cfg: Any) -> dict[str, Any]:
    """Selection keys of the method config (e.g. method=p-sle-truth), else the top-level ones."""
    defaults = {"selection": "all", "selector": None, "top_k": 1, "runaway": None}
    return {k: cfg.method.get(k, cfg.get(k, v)) for k, v in defaults.items()}


def learn_task(cfg: Any) -> dict[str, Any]:
    """One (method, dataset, seed) of an experiment: its result row, graph (or run account) and checkpoint beside
    the row; an existing row for the same dataset settings is kept and the task skipped."""
    from hpc.executors import announce_dashboard, executor_from_config
    from hpc.resources import PeakMemory
    from hpc.run import build_estimator, graph_meta

    out = result_path(cfg)
    asked = None if cfg.dataset.kind == "file" else data_settings(cfg.dataset)
    if out.is_file():
        return existing_result(out, asked)
    out.parent.mkdir(parents=True, exist_ok=True)
    x, variables, truth = load_dataset(cfg.dataset, cfg.seed)
    with executor_from_config(cfg.executor) as executor, PeakMemory() as memory:
        if cfg.get("progress", True):
            announce_dashboard(executor)
        # Timed from here: starting the dask cluster is set-up, not the method's work.
        start = time.perf_counter()
        # PEF tasks keep a checkpoint beside their result: a requeued SLURM task resumes from it.
        resume = out.with_suffix(".checkpoint.h5") if cfg.method.pef and cfg.get("checkpoint", True) else None
        learner = build_estimator(method_spec(cfg), cfg.time_limit, cfg.get("wall_limit"), executor,
                                  cfg.get("progress", True), checkpoint=resume)
        learner.fit(x, variables)
        seconds = time.perf_counter() - start
    # The learner's own account (per-cluster runs, winners and seconds, fusion statistics) travels with the graph,
    # or, with no graph to score, stands alone: which member runs finished, failed or were cut, and when, says why.
    account = graph_meta(learner, method_label(cfg), seconds, seed=cfg.seed)
    row = write_result(out, cfg, learner, account, truth, {
        "experiment": cfg.experiment_name, "method": method_label(cfg), "network": cfg.dataset.network,
        "nodes": cfg.dataset.get("nodes"), "p": len(variables), "dataset": asked,
        "edges": None if truth is None else len(truth.directed), "seed": cfg.seed,
        # A run over its wall limit, or a PEF run with a cluster that got no result, is not the method's answer.
        "status": learner.status_, "seconds": round(seconds, 3), "peak_mb": round(memory.peak / 2**20),
        "time_limit": cfg.time_limit, "wall_limit": cfg.get("wall_limit")})
    scores = (f", F1 {row['f1_adjacent']:.3f} / {row['f1_arrowhead']:.3f}, SHD {row['shd']}"
              if "f1_adjacent" in row else "")
    print(f"psle: {row['status']} in {seconds:.1f} s{scores} -> {out}", file=sys.stderr, flush=True)
    if resume is not None:
        resume.unlink(missing_ok=True)  # the result is written: nothing left to resume
    return row


def existing_result(out: Path, asked: dict[str, Any] | None) -> dict[str, Any]:
    """A result already there, if it is for the dataset settings asked (a task rerun skips it)."""
    from hpc.data.generate import WEIGHTS

    row = json.loads(out.read_text())
    # Rows from before the weights setting existed were all made with the paper's weights, and replicas
    # from before the order setting existed in the generator's order.
    legacy = {"weights": list(WEIGHTS), **({"order": "generator"} if asked and "order" in asked else {})}
    if asked is not None and {**legacy, **row.get("dataset", asked)} != asked:
        raise PsleError(f"{out} holds a result for dataset settings {row['dataset']}, not the {asked} asked; "
                        "move it away or write elsewhere (results_dir=...)")
    print(f"psle: {out} exists; task skipped (delete it to run again)", file=sys.stderr, flush=True)
    return {**row, "skipped": True}


def write_result(out: Path, cfg: Any, learner: Any, account: dict[str, Any], truth: Any,
                 row: dict[str, Any]) -> dict[str, Any]:
    """The row (hpc.results' fields), with the graph and its scores, or the run's account when it has none."""
    from hpc.graphs.io import write_json
    from hpc.graphs.metrics import evaluate
    from hpc.results import pef_fields

    if "clusters" in account:
        row |= pef_fields(account)
    if row["status"] == "ok":
        graph_file = out.with_suffix(".graph.json")
        write_json(graph_file, learner.graph_, account)
        row["graph"] = graph_file.name
        if truth is not None:
            row.update(evaluate(learner.graph_, truth).as_dict())
    else:
        runs_file = out.with_suffix(".runs.json")
        write_text_atomic(runs_file, dumps({**account, "status": row["status"]}, indent=1) + "\n")
        row["runs"] = runs_file.name
    write_text_atomic(out, dumps(row, indent=1) + "\n")
    return row


def train_task(cfg: Any) -> dict[str, Any]:
    from hpc.train.space import PAPER_SPACE
    from hpc.train.autosle import TrainConfig
    from hpc.train.problems import TrainingConfig
    from hpc.data.generate import WEIGHTS
    from hpc.executors import executor_from_config
    from hpc.run import train_ensemble

    t = cfg.train
    training = TrainingConfig(problems=t.problems, min_nodes=t.min_nodes, max_nodes=t.max_nodes, samples=t.samples,
                              seed=cfg.seed, networks=tuple(t.get("networks") or ()),
                              weights=tuple(t.get("weights") or WEIGHTS))
    config = TrainConfig(k=t.k, trials=t.trials, seed=cfg.seed, time_limit=cfg.time_limit, training=training,
                         objective=t.get("objective", "portfolio"), space=tuple(t.get("space") or PAPER_SPACE))
    folder = Path(cfg.results_dir)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / f"sle-seed{cfg.seed}.yaml"
    with executor_from_config(cfg.executor) as executor:
        result = train_ensemble(config, folder / f"train-seed{cfg.seed}.h5", out, executor, cfg.get("progress", True))
    return {"sle": str(out), "members": result.members}


def run_task(cfg: Any) -> dict[str, Any]:
    if cfg.task == "learn":
        return learn_task(cfg)
    if cfg.task == "train":
        return train_task(cfg)
    raise PsleError(f"unknown task {cfg.task!r} (learn or train)")
