"""Numerics: each row against an fp64 reference, once every row is timed."""
