"""Backends: what realizes a cell and runs the suite in it (``base``), where the packages come from
(``packages``), each backend side by side (``local/``, ``docker/``), what each can realize (``rules``),
what a run's result document becomes (``records``), and the registry that makes one from its name and
settings (``registry``)."""
