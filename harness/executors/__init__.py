"""Executors run a backend's cells: on this host's GPUs (``pool``), as a Slurm array (``slurm/``), as
Kubernetes Jobs (``k8s/``); ``runs`` holds what they share, ``launch`` picks one, ``rerun`` repeats one
run."""
