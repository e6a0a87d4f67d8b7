"""The cluster layer against a real SLURM (slurm/local/start.sh): array sweeps, preemption, preflight.

Skipped where no SLURM answers, unless PSLE_REQUIRE_SLURM=1 (as in CI), where that is a failure.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import pytest
import yaml

from tests.conftest import psle_experiment

pytestmark = pytest.mark.slurm
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["--problems", "6", "--max-nodes", "40", "--k", "2", "--trials", "8"]


@pytest.fixture(scope="module", autouse=True)
def slurm():
    try:
        up = subprocess.run(["sinfo", "-h"], capture_output=True, text=True, timeout=20).returncode == 0
    except (FileNotFoundError, subprocess.TimeoutExpired):
        up = False
    if not up:
        if os.environ.get("PSLE_REQUIRE_SLURM") == "1":
            pytest.fail("SLURM is not running (start it with: bash slurm/local/start.sh)")
        pytest.skip("no SLURM here (bash slurm/local/start.sh starts one)")


def sacct_jobs() -> set[str]:
    """Submitted jobs known to accounting; an array job counts once, however many tasks it has."""
    out = subprocess.run(["sacct", "-X", "-n", "-a", "-S", "now-1days", "-o", "JobID%30"], capture_output=True,
                         text=True).stdout
    return {ln.strip().split("_")[0] for ln in out.splitlines() if ln.strip()}


def jobs_since(before: set[str], wanted: int = 1, timeout: float = 60) -> set[str]:
    """Jobs accounted since `before`: slurmdbd records a job a few seconds after slurmctld starts it, so poll."""
    deadline = time.monotonic() + timeout
    while len(new := sacct_jobs() - before) < wanted and time.monotonic() < deadline:
        time.sleep(1)
    return new


def jobs_from(folder: Path) -> set[str]:
    """Jobs submitted from `folder` that SLURM knows of: slurmctld's (squeue: every job from the moment sbatch
    returns, finished ones for MinJobAge, 300 s here) and accounting's (sacct, which records a job only some
    seconds after it starts). Other users' jobs on the same SLURM have other working folders."""
    live = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%Z"], capture_output=True, text=True).stdout
    past = subprocess.run(["sacct", "-X", "-n", "-a", "-S", "now-1days", "-P", "-o", "JobID,WorkDir"],
                          capture_output=True, text=True).stdout
    rows = [ln.strip().split("|", 1) for ln in (live + past).splitlines() if "|" in ln]
    return {job.split("_")[0] for job, workdir in rows if Path(workdir) == folder}


def experiment(tmp: Path, *overrides: str) -> subprocess.CompletedProcess:
    return psle_experiment(tmp, "-m", "hydra/launcher=submitit_slurm", *overrides)


SWEEP = ["method=p-fges,p-pc-stable", "dataset.network=asia,child", "dataset.nodes=40", "seed=0,1",
         "executor.workers=1", "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2",
         "hydra.launcher.timeout_min=30", "progress=false", "+pef_options.whole_below=0"]  # cut even 40 variables


@pytest.mark.slow
def test_sweep_is_one_array_job_with_correct_results_and_resubmission_skips(tmp_path):
    from hpc.data.generate import benchmark_problem
    from hpc.graphs.io import read_json
    from hpc.graphs.metrics import evaluate
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.pipeline import PEF

    run = experiment(tmp_path, *SWEEP)
    assert run.returncode == 0, run.stderr[-3000:]
    results = sorted((tmp_path / "default").glob("*/*/seed?.json"))
    assert len(results) == 8
    job_dirs = [p.name for p in (tmp_path / "default").glob(".hydra/sweep/*/.submitit/[0-9]*_[0-9]*")]
    assert len({d.split("_")[0] for d in job_dirs}) == 1 and len(job_dirs) == 8, job_dirs
    for path in results:
        row = json.loads(path.read_text())
        problem = benchmark_problem(40, row["seed"], 1000, network=row["network"])
        graph, meta = read_json(path.with_suffix(".graph.json"))
        assert sum(c["size"] for c in meta["clusters"]) == row["p"] and meta["fusion"]["pairs_screened"] > 0
        metrics = evaluate(graph, problem.truth)
        assert row["f1_adjacent"] == pytest.approx(metrics.f1_adjacent) and row["shd"] == metrics.shd
        # fGES and (numpy) PC-Stable are reproducible run to run: a SLURM task's graph is a local run's
        # with the method config's members.
        members = yaml.safe_load((ROOT / "hpc" / "conf" / "method" / f"{row['method']}.yaml").read_text())["members"]
        local = PEF(members, progress=False,
                    partition=PartitionConfig(whole_below=0)).fit(problem.data, problem.variables)
        assert local.graph_ == graph, f"{path}: the SLURM task's graph differs from a local run"
    stamps = {p: p.stat().st_mtime_ns for p in results}
    before = sacct_jobs()
    again = experiment(tmp_path, *SWEEP)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {p: p.stat().st_mtime_ns for p in results} == stamps  # every task saw its result and skipped
    assert len(jobs_since(before)) == 1  # the resubmission is again a single array job


@pytest.mark.slow
def test_submit_and_leave_then_status_follows_the_sweep(tmp_path):
    # The array is submitted held (sbatch --hold), so none of its tasks can start, let alone finish, until the
    # test releases it: the command can only return here by leaving, and status is sure to see them pending.
    task = ["method=p-fges", "dataset.network=asia", "dataset.nodes=40", "seed=0,1", "executor.workers=1",
            "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=2", "progress=false"]
    run = experiment(tmp_path, "wait=false", *task, "+hydra.launcher.additional_parameters.hold=true")
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(ln for ln in run.stderr.splitlines() if ln.startswith("psle-experiment: submitted SLURM array job"))
    job = line.split("array job ")[1].split()[0]
    sweep = line.rsplit("psle status ", 1)[1]
    assert not list((tmp_path / "default").glob("p-fges/*/seed*.json"))
    assert jobs_from(tmp_path) == {job}
    watch = subprocess.Popen([str(BIN / "psle"), "status", sweep, "--watch", "2"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    shown = []
    deadline = time.monotonic() + 300  # a hang guard: status prints every 2 s
    while not any("2 tasks: 2 pending" in ln for ln in shown):
        shown.append(watch.stdout.readline())
        assert shown[-1] and time.monotonic() < deadline, "".join(shown)
    subprocess.run(["scontrol", "release", job], check=True)
    out, err = watch.communicate(timeout=600)
    assert watch.returncode == 0, err
    out = "".join(shown) + out
    assert out.strip().splitlines()[-1] == "2 tasks: 2 done"
    assert "F1 " in out and str(tmp_path / "default" / "p-fges" / "asia-40" / "seed1.json") in out
    again = experiment(tmp_path, *task)  # blocking: ends with the same summary, the finished tasks skipped
    assert again.returncode == 0 and "psle-experiment: 2 tasks: 2 skipped (done before)" in again.stderr, \
        again.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("preempt", [["scontrol", "requeue"], ["scancel", "--signal=USR2"]])
def test_a_sweep_task_preempted_while_running_is_pending_not_a_failure(tmp_path, preempt):
    """SLURM SIGTERMs every process of a requeued task: its dask workers die first. The sweep must
    wait for the requeued task (which resumes from its checkpoint) and end rc 0 with both results."""
    proc = subprocess.Popen([str(BIN / "psle-experiment"), "-m", "hydra/launcher=submitit_slurm", "method=p-sle",
                             "dataset.network=alarm", "dataset.nodes=400", "seed=0,1", "executor.workers=1",
                             "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=3"],
                            cwd=tmp_path, env={**os.environ, "PSLE_RESULTS": str(tmp_path)}, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 300
    while not (logs := sorted(tmp_path.glob("default/.hydra/sweep/*/.submitit/*_0/*_log.err"))) \
            or "estimation: member runs" not in logs[0].read_text():
        assert time.monotonic() < deadline and proc.poll() is None, "the task never started estimating"
        time.sleep(0.5)
    job = logs[0].parent.name
    subprocess.run([*preempt, job], check=True)
    err = proc.communicate(timeout=900)[1]
    assert proc.returncode == 0, err[-3000:]
    assert "psle-experiment: 2 tasks: 2 done" in err
    for seed in (0, 1):
        row = json.loads((tmp_path / "default" / "p-sle" / "alarm-400" / f"seed{seed}.json").read_text())
        assert row["status"] == "ok" and row["f1_adjacent"] > 0.8
    restarts = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
    assert "stopped by SLURM" in logs[0].read_text() or "Restarts=0" not in restarts


def submitit_logs(folder: Path, job: str) -> str:
    """Everything a submitit job printed to stderr, over its requeues."""
    return "".join(p.read_text() for p in (folder / ".submitit").glob(f"{job}_*log.err"))


def checkpointed_runs(checkpoint: Path) -> int:
    """Member runs a psle learn checkpoint holds so far (0 before the job has written it)."""
    try:
        with h5py.File(checkpoint, "r") as f:
            return len(json.loads(f["runs"][()].decode()))
    except (OSError, KeyError):
        return 0


@pytest.mark.slow
def test_psle_learn_as_a_slurm_job_resumes_its_checkpoint_after_a_requeue(tmp_path):
    from hpc.pef.pipeline import PEF

    problem = tmp_path / "a.h5"
    assert subprocess.run([str(BIN / "psle"), "generate", "--network", "alarm", "--nodes", "400", "--seed", "1", "-o",
                           str(problem)], capture_output=True).returncode == 0
    out, ckpt = tmp_path / "g.json", tmp_path / "g.checkpoint.h5"
    run = subprocess.run([str(BIN / "psle"), "learn", str(problem), "--method", "p-fges", "--param", "penalty=2",
                          "--slurm", "--cpus", "2", "--mem-gb", "4", "-o", str(out)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    job = run.stderr.split("submitted SLURM job ")[1].split()[0]
    assert f"it resumes {ckpt}" in run.stderr

    deadline = time.time() + 300
    while checkpointed_runs(ckpt) < 2:
        assert time.time() < deadline and not out.exists(), "the job made no progress, or ended too soon"
        time.sleep(0.3)
    subprocess.run(["scontrol", "requeue", job], check=True)
    # The stopped task may still finish within SLURM's KillWait (a fast machine) and write the graph; the
    # requeued one resumes all the same, so wait for its answer: the graph written after it resumed.
    while not ((logs := submitit_logs(tmp_path, job)).rfind(" edges in ") > logs.find("resuming from") >= 0):
        assert time.time() < deadline + 300, "the requeued job did not finish"
        time.sleep(1)
    assert "member runs already finished" in logs, logs[-2000:]
    assert "stopped by SLURM" in logs and "Traceback" not in logs, logs[-2000:]
    from hpc.data.problem import read_problem
    from hpc.graphs.io import read_json

    data = read_problem(problem)
    local = PEF([{"method": "fges", "penalty": 2}], progress=False).fit(data.data, data.variables)
    assert read_json(out)[0] == local.graph_


@pytest.mark.parametrize("overrides, message", [
    (["hydra.launcher.partition=nope"], "no such SLURM partition"),
    (["hydra.launcher.mem_gb=0"], "mem_gb=0: must be positive"),
    # Requests no node can ever meet: SLURM would accept them and leave them pending without a word.
    (["hydra.launcher.cpus_per_task=8"], "cpus_per_task=8: partition debug's largest node has 2 CPUs"),
    (["hydra.launcher.mem_gb=64"], "mem_gb=64: partition debug's largest node has"),
    # 2 h per run cannot fit a 1 h job: every task would be killed and requeued, never recorded as timed out.
    (["time_limit=7200", "hydra.launcher.timeout_min=60"], "raise timeout_min to at least 130"),
    # One bad task among good ones stops the whole sweep before any of it is submitted.
    (["dataset.network=asia,nope", "seed=0,1"], "task [method=p-fges dataset.nodes=40 dataset.network=nope seed=0]: "
                                                "dataset.network=nope: unknown network"),
])
def test_wrong_launcher_settings_fail_before_submission(tmp_path, overrides, message):
    run = experiment(tmp_path, "method=p-fges", "dataset.nodes=40", *overrides)
    assert run.returncode == 2
    errors = [ln for ln in run.stderr.splitlines() if ln.startswith("psle-experiment: error:")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in run.stderr
    assert jobs_from(tmp_path) == set()  # nothing was submitted (a job would be in squeue as soon as sbatch returned)


@pytest.fixture(scope="module")
def reference_sle(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("reference")
    run = subprocess.run([str(BIN / "psle"), "train", *TRAIN, "--checkpoint", str(tmp / "ck.h5"), "-o",
                          str(tmp / "sle.yaml")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return yaml.safe_load((tmp / "sle.yaml").read_text())


def job_processes(job_id: str) -> list[int]:
    """The processes of a job running on this machine (those whose environment names it)."""
    tag, pids = f"SLURM_JOB_ID={job_id}".encode(), []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and tag in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:  # gone, or not ours to read
            pass
    return pids


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def preempt_mid_trial(ckpt: Path, job, preempt: list[str], resumes: int, trials: int) -> dict:
    """Preempt the training once it has resumed `resumes` times and recorded `trials` trials, at a moment
    when a trial is under way with some but not all of its problems evaluated; returns that status.

    Each look holds the job's processes (SIGSTOP) while it reads the status, so the status is the one the
    job is held at when the preemption is sent: a trial of these small problems takes a fifth of a second,
    and looks that let the job run on miss its windows on a fast machine."""
    from hpc.errors import PsleError
    from hpc.train.status import read_status

    job_id = str(job.job_id)
    deadline = time.time() + 300
    while True:
        assert time.time() < deadline and not job.done(), "training made no progress"
        held = job_processes(job_id)
        signal_all(held, signal.SIGSTOP)
        try:
            s = read_status(ckpt)
        except PsleError:  # not written yet
            s = None
        w = s and s["trial_under_way"]
        found = held and s and w and s["resumes"] == resumes and s["trials_recorded"] >= trials and \
            0 < w["problems_done"] < w["problems"]
        if found:
            subprocess.run([*preempt, job_id], check=True)
        signal_all(held, signal.SIGCONT)
        if found:
            return s
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("preempt", [["scontrol", "requeue"], ["scancel", "--signal=USR2"]])
def test_training_preempted_twice_mid_trial_resumes_to_the_same_sle(tmp_path, reference_sle, preempt):
    from hpc.train.autosle import TrainConfig
    from hpc.train.problems import TrainingConfig
    from hpc.launch.slurm import submit_train
    from hpc.store import canonical

    ckpt, out = tmp_path / "ck.h5", tmp_path / "sle.yaml"
    config = TrainConfig(k=2, trials=8, training=TrainingConfig(problems=6, max_nodes=40))  # = `psle train *TRAIN`
    job = submit_train(config, ckpt, out, None, tmp_path / ".submitit", timeout_min=30, mem_gb=4, cpus=2)
    first = preempt_mid_trial(ckpt, job, preempt, resumes=0, trials=3)
    second = preempt_mid_trial(ckpt, job, preempt, resumes=1, trials=first["trials_recorded"] + 2)
    assert job.result() == str(out)
    learned = yaml.safe_load(out.read_text())
    assert learned["members"] == reference_sle["members"]
    assert learned["training"]["rounds"] == reference_sle["training"]["rounds"]
    with h5py.File(ckpt) as f:
        assert f["evaluations/runs"][()].max() == 1  # no finished evaluation ran twice, cut trials included
        resumes = int(f.attrs["resumes"])
    # A task SLURM stops may still finish in the seconds before its kill (how much work was left is the
    # machine's speed): then the second preemption resumes nothing, and a start SLURM makes after that finds the
    # training done. So every resume the checkpoint counts is one the log shows, and the first, with most of
    # the training left, is always there.
    logs = list((tmp_path / ".submitit").glob(f"{job.job_id}_*_log.*"))
    text = "".join(path.read_text() for path in logs)
    assert text.count("Starting with JobEnvironment") >= 2
    assert 1 <= resumes == text.count("psle: resumed (resume #") <= 2
    cut = [canonical(s["trial_under_way"]["member"]) for s in (first, second)]
    with h5py.File(ckpt) as f:
        recorded = {m.decode() if isinstance(m, bytes) else m for m in f["trials/member"][()]}
    assert set(cut) <= recorded  # each cut trial was finished after its resume, not dropped


#: Seconds dask-jobqueue waits, by default, before it cancels a lost worker's job and submits another.
LOST_WORKER_DEFAULT = 15


def worker_jobs(executor) -> dict[str, str]:
    """Worker address -> the SLURM job it lives in."""
    return executor.client.run(lambda: os.environ.get("SLURM_JOB_ID"))


@pytest.mark.slow
def test_pef_over_three_slurm_worker_jobs_survives_a_worker_job_requeued_mid_run(tmp_path, monkeypatch):
    """executor=slurm_dask / psle learn --nodes: PEF's tasks (neighbour blocks, member runs, fusion and repair
    blocks) run in three dask workers that are SLURM jobs; one of them is requeued (as preemption does) after the
    first member run returns, while the others run, and held in the queue for longer than dask's 15 s before it
    cancels and replaces a lost worker job. Dask reruns its tasks elsewhere, the job comes back as a worker (no
    other worker job is submitted to compete with it for the node), and the graph is the local run's."""
    monkeypatch.chdir(tmp_path)  # the worker jobs' slurm-*.out logs land in the working directory
    from hpc.data.generate import benchmark_problem
    from hpc.executors import SlurmDaskExecutor, WorkerJob
    from hpc.pef.fusion import FusionConfig
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.pipeline import PEF

    problem = benchmark_problem(400, 0, 1000, network="alarm")
    # The sparse paths on 400 variables, so that partition and fusion also run as worker tasks.
    settings = {"partition": PartitionConfig(whole_below=0, sparse_above=0), "fusion": FusionConfig(candidates_above=0)}
    before = sacct_jobs()
    requeued: dict[str, object] = {}
    # --oversubscribe: three 1-core worker jobs share this machine's 2 cores (on a cluster each has its node).
    with SlurmDaskExecutor(3, WorkerJob(cores=1, memory="3GB", walltime="00:20:00", extra=("--oversubscribe",))) as ex:
        ex.client.wait_for_workers(3, timeout=300)
        jobs = worker_jobs(ex)
        assert len(set(jobs.values())) == 3 and set(jobs.values()) <= jobs_since(before, 3)
        drawn = ex.run_drawn

        def requeue_one_after_the_first_result(fn, draw):
            for key, result in drawn(fn, draw):
                if not requeued:
                    busy = [a for a, tasks in ex.client.processing().items() if tasks] or list(jobs)
                    requeued.update(job=jobs[busy[0]], address=busy[0], busy=len(busy))
                    subprocess.run(["scontrol", "requeue", str(requeued["job"])], check=True)
                    deadline = time.monotonic() + 120
                    while busy[0] in ex.client.scheduler_info()["workers"]:
                        assert time.monotonic() < deadline, "the requeued worker job's worker never left"
                        time.sleep(0.2)
                    # As a busy cluster keeps a requeued job waiting: past dask-jobqueue's default replacement.
                    subprocess.run(["scontrol", "hold", str(requeued["job"])], check=True)
                    time.sleep(2 * LOST_WORKER_DEFAULT)
                    subprocess.run(["scontrol", "release", str(requeued["job"])])  # fails if it was cancelled
                yield key, result

        ex.run_drawn = requeue_one_after_the_first_result
        fitted = PEF([{"method": "fges"}], executor=ex, progress=False, **settings).fit(problem.data, problem.variables)
        ex.client.wait_for_workers(3, timeout=300)  # the requeued job started again and its worker rejoined
        assert requeued["job"] in set(worker_jobs(ex).values()), "the requeued worker job did not come back"
        assert jobs_since(before, 3) == set(jobs.values()), "a worker job was submitted to replace the requeued one"
    import dask

    assert dask.config.get("distributed.deploy.lost-worker-timeout") == f"{LOST_WORKER_DEFAULT}s"  # put back
    assert requeued["busy"] >= 1
    places = {place for step in fitted.placements_.values() for place in step}
    assert len({p.split()[2] for p in places}) >= 2 and {p.split()[2] for p in places} <= set(jobs.values())
    assert set(fitted.placements_) == {"partition", "estimation", "fusion", "rival", "polish", "sweep", "recut"}
    local = PEF([{"method": "fges"}], progress=False, **settings).fit(problem.data, problem.variables)
    assert fitted.graph_ == local.graph_


def test_worker_jobs_that_never_start_are_cancelled_and_dask_settings_put_back(tmp_path, monkeypatch):
    """The executor gives up when no worker job starts within FIRST_WORKER_WAIT: it must not leave its jobs in the
    queue (they would start later for nobody) nor its dask settings in the process. The job here may not start
    for an hour (--begin), so the outcome does not depend on how fast anything runs."""
    import dask
    import dask.distributed  # noqa: F401 (its settings' defaults)

    import hpc.executors as executors
    from hpc.errors import PsleError
    from hpc.executors import SlurmDaskExecutor, WorkerJob

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(executors, "FIRST_WORKER_WAIT", 5)
    default = dask.config.get("distributed.deploy.lost-worker-timeout")
    with pytest.raises(PsleError, match="no SLURM worker job started within 5 s"):
        SlurmDaskExecutor(1, WorkerJob(cores=1, memory="1GB", walltime="00:20:00", extra=("--begin=now+3600",)))
    assert dask.config.get("distributed.deploy.lost-worker-timeout") == default
    jobs = jobs_from(tmp_path)
    assert len(jobs) == 1, "the worker job was not submitted"
    states = subprocess.run(["squeue", "-h", "-t", "all", "-j", next(iter(jobs)), "-o", "%T"], capture_output=True,
                            text=True).stdout.split()
    assert states in ([], ["CANCELLED"]), f"the worker job is still {states}"


@pytest.mark.slow
def test_psle_learn_slurm_nodes_resumes_its_checkpoint_after_the_scheduler_job_is_requeued(tmp_path):
    """--slurm --nodes 1: the run (dask's scheduler) is a SLURM job and its worker another (the two fill this
    2-core node). Requeued after two member runs (its worker job suspended meanwhile, so that it cannot finish
    first), the run's job starts again with a new worker job, resumes its checkpoint and gives the local graph;
    the first worker job, resumed with its scheduler gone, ends by itself (it held the core the new one needs)."""
    from hpc.data.problem import read_problem
    from hpc.graphs.io import read_json
    from hpc.pef.partition import PartitionConfig
    from hpc.pef.pipeline import PEF
    from hpc.pef.steps import steps_from

    problem = tmp_path / "a.h5"
    assert subprocess.run([str(BIN / "psle"), "generate", "--network", "alarm", "--nodes", "1000", "--seed", "1", "-o",
                           str(problem)], capture_output=True).returncode == 0
    out, ckpt = tmp_path / "g.json", tmp_path / "g.checkpoint.h5"
    before = sacct_jobs()
    run = subprocess.run([str(BIN / "psle"), "learn", str(problem), "--method", "p-boss", "--param", "penalty=2",
                          "--pef", "whole_below=0", "--pef", "repair.rounds=0",  # repair ties follow JVM history
                          "--slurm", "--cpus", "1", "--mem-gb", "3", "--nodes", "1",
                          "--worker-cpus", "1", "--worker-mem-gb", "3", "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    job = run.stderr.split("submitted SLURM job ")[1].split()[0]

    deadline = time.time() + 400
    while checkpointed_runs(ckpt) < 2:
        assert time.time() < deadline and not out.exists(), "the job made no progress, or ended too soon"
        time.sleep(0.1)
    # Its worker job suspended, the run cannot finish within SLURM's KillWait however fast the machine: the
    # requeue's SIGCONT goes to the run's job only.
    (worker,) = jobs_since(before, 2) - {job}
    subprocess.run(["scontrol", "suspend", worker], check=True)
    assert not out.exists(), "the run ended before the requeue: no resume to test"
    subprocess.run(["scontrol", "requeue", job], check=True)
    while submitit_logs(tmp_path, job).count("starting 1 SLURM worker job ") < 2:
        assert time.time() < deadline + 200, "the requeued job did not start"
        time.sleep(0.5)
    assert not out.exists(), "the stopped run wrote a graph"
    subprocess.run(["scontrol", "resume", worker], check=True)
    while not out.exists():
        assert time.time() < deadline + 400, "the requeued job did not finish"
        time.sleep(1)
    logs = submitit_logs(tmp_path, job)
    assert "resuming from" in logs, logs[-2000:]
    assert "tasks in SLURM job" in logs or "task in SLURM job" in logs, logs[-2000:]
    data = read_problem(problem)
    local = PEF([{"method": "boss", "penalty": 2}], progress=False, partition=PartitionConfig(whole_below=0),
                steps=steps_from({"repair.rounds": 0})).fit(data.data, data.variables)
    assert read_json(out)[0] == local.graph_


def test_psle_learn_nodes_refuses_worker_jobs_no_node_can_run_before_submitting(tmp_path):
    problem = tmp_path / "a.h5"
    assert subprocess.run([str(BIN / "psle"), "generate", "--network", "asia", "--nodes", "40", "--seed", "0", "-o",
                           str(problem)], capture_output=True).returncode == 0
    for flags, message in ((["--worker-cpus", "64"], "--cpus=64: partition debug's largest node has"),
                           (["--worker-mem-gb", "4096"], "--mem-gb (each worker job's GB)=4096"),
                           (["--method", "fges"], "--method fges runs in one process")):
        run = subprocess.run([str(BIN / "psle"), "learn", str(problem), "-o", str(tmp_path / "g.json"), "--nodes", "3",
                              *flags], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert run.returncode != 0 and message in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not (tmp_path / "g.json").exists()
    assert jobs_from(tmp_path) == set()  # neither the run's job nor a worker job was submitted


@pytest.mark.slow
def test_records_run_as_a_slurm_array_and_a_selector_fits_from_its_shards(tmp_path):
    """slurm/templates/psle_records.sbatch: two array tasks, one records file each, one selector from both."""
    portfolio = tmp_path / "pair.yaml"
    portfolio.write_text(yaml.safe_dump({"name": "pair", "members": [
        {"method": "fges", "penalty": 2.0}, {"method": "pc-stable", "alpha": 0.05, "engine": "numpy"}]}))
    out = tmp_path / "records"
    options = ["--families", "hub", "ws", "--problems-per-family", "1", "--min-nodes", "60", "--max-nodes", "80",
               "--portfolio", str(portfolio), "--time-limit", "120"]
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    submit = subprocess.run(["sbatch", "--parsable", "--wait", "--array=0-1", "--mem=2G", "--cpus-per-task=1",
                             f"--output={tmp_path}/r-%A_%a.out", "slurm/templates/psle_records.sbatch", str(out),
                             *options], capture_output=True, text=True, env=env, timeout=600,
                            cwd=Path(__file__).resolve().parents[1])
    logs = "".join(p.read_text() for p in tmp_path.glob("r-*.out"))
    assert submit.returncode == 0, submit.stderr + logs
    shards = sorted(out.glob("records-*.h5"))
    assert [p.name for p in shards] == ["records-0.h5", "records-1.h5"], logs
    from hpc.select.records import read_records

    families = [{json.loads(r["key"].rpartition("#")[0].rpartition("#")[0])["family"] for r in read_records(p)["rows"]}
                for p in shards]
    assert sorted(map(sorted, families)) == [["hub"], ["ws"]]  # each task ran its own share
    fit = subprocess.run([str(BIN / "psle"), "selector", "fit", *map(str, shards), "--target", "bic",
                          "-o", str(tmp_path / "s.json")], capture_output=True, text=True)
    assert fit.returncode == 0 and "hub, ws" in fit.stderr, fit.stderr


@pytest.mark.slow
def test_bench_nodes_runs_over_worker_jobs_and_matches_the_local_graph(tmp_path):
    """scripts/bench_nodes.py (BENCHMARKS.md's several-nodes run) on a small problem."""
    run = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "scripts" / "bench_nodes.py"),
                          "--network", "child", "--nodes", "200", "--workers", "2", "--worker-sbatch=--oversubscribe",
                          "--pef", "whole_below=0", "sparse_above=0", "candidates_above=0", "--folder", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "same graph as the local run: True" in run.stdout and "| estimation |" in run.stdout, run.stdout


@pytest.mark.slow
def test_bootstrap_array_with_a_task_requeued_mid_resample_completes_and_runs_no_resample_twice(tmp_path):
    """psle learn --bootstrap 3 --slurm --wait: one array task per resample, two at a time on this node. Task 0 is
    requeued while its resample runs: it runs that resample again, the other tasks' resample files are written
    once and never touched again, and the consensus is written from all three."""
    from hpc.bootstrap import resample_folder

    problem = tmp_path / "a.h5"
    assert subprocess.run([str(BIN / "psle"), "generate", "--network", "alarm", "--nodes", "1000", "--seed", "1", "-o",
                           str(problem)], capture_output=True).returncode == 0
    out = tmp_path / "g.json"
    run = subprocess.Popen([str(BIN / "psle"), "learn", str(problem), "--method", "p-boss", "--param", "penalty=2",
                            "--pef", "whole_below=0", "--pef", "repair.rounds=0", "--bootstrap", "3", "--slurm",
                            "--wait", "--cpus", "1", "--mem-gb", "3", "--workers", "1", "-o", str(out)],
                           stderr=(tmp_path / "err.txt").open("w"))
    folder, logs = resample_folder(out), tmp_path / ".submitit"

    def starts(task: int) -> int:
        return sum(p.read_text().count(" resamples of ") for p in logs.glob(f"*_{task}_0_log.err"))

    deadline = time.time() + 600
    while starts(0) < 1:
        assert time.time() < deadline and run.poll() is None, "task 0 never started"
        time.sleep(0.3)
    job = next(logs.glob("*_0_log.err")).name.split("_")[0]
    assert not (folder / "resample-00000.json").exists(), "task 0 finished before the requeue: no resume to test"
    subprocess.run(["scontrol", "requeue", f"{job}_0"], check=True)
    written: dict[str, float] = {}
    while run.poll() is None:
        for p in folder.glob("resample-*.json"):
            written.setdefault(p.name, p.stat().st_mtime_ns)
        assert time.time() < deadline + 600, "the bootstrap did not finish"
        time.sleep(0.3)
    assert run.returncode == 0, (tmp_path / "err.txt").read_text()[-2000:]
    assert starts(0) == 2 and starts(1) == 1 and starts(2) == 1
    assert "the requeued task runs this resample again" in next(logs.glob("*_0_0_log.err")).read_text()
    for name in ("resample-00001.json", "resample-00002.json"):
        assert (folder / name).stat().st_mtime_ns == written[name]  # written once, never run again
    doc = json.loads(out.read_text())
    assert doc["edges"] and doc["meta"]["bootstrap"]["resamples"] == 3
    assert len(out.with_suffix(".frequencies.csv").read_text().splitlines()) > 1

