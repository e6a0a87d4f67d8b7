"""Launch layer: Hydra experiments, submitit/SLURM jobs, dask executors for a task."""
