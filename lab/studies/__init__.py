"""Studies of the timing method and of what the harness measured: each reads result files or runs on a GPU
and prints figures; ``python -m lab.studies.<name>``, its docstring gives the command line."""
