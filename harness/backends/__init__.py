"""Backends: what realizes a cell and runs the suite in it (``base``), each backend (``local``, ``docker``),
what each can realize (``rules``), and the registry that makes one from its name and settings
(``registry``)."""
