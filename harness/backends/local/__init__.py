"""The local backend (``backend``): the suite in a subprocess of a Python that has torch, with per-cell
virtual environments (``venvs``) and cuDNN releases from their wheels (``cudnn_releases``), each made
once into a cache folder (``cache``), the system cuDNN found and shadowed (``cudnn_dirs``), and what an
interpreter holds (``interpreter_probe``, run as a script)."""
