"""Backends: what realizes a cell and runs the suite in it (``base``), each backend (``local``; ``docker``,
with its images, containers and re-run checks in ``docker_*``), what each can realize (``rules``), and the
registry that makes one from its name and settings (``registry``)."""
