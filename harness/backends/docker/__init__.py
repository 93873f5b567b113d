"""The docker backend (``backend``): each cell's Dockerfile rendered from ``images/`` (``dockerfile``), its
image built once (``images``), one container per run (``containers``) reaching the GPUs in one of three
modes (``gpu_access``), the engine it talks to (``engine``), and what re-running a result may run
(``rerun``)."""
