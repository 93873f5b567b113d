"""Timing: the timer, how a row is sampled in windows across its process, and its samples' statistics."""
