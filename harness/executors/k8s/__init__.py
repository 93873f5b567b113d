"""Kubernetes: one Indexed Job per cell (``jobs``), submitted and followed through the official client
(``submit``), and what the pods wrote gathered into a results folder (``gather``)."""
