"""Slurm: one array job per run (``array``), what each task asks for (``request``), and what each task
runs on its node (``task``)."""
