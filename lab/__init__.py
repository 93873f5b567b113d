"""The lab: studies of the timing method, run on the tool's results; never imported by ``harness``."""
