"""What a local cell runs in beyond the given interpreter: per-cell virtual environments (a torch build)
and cuDNN releases from their wheels, each made once into a cache folder and reused."""
