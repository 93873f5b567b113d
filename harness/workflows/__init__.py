"""Workflows: several runs and reports in a row, each a sequence of plain steps: ``qualify`` (rounds until
the verdicts settle), ``bisect`` (the first release where a row changed) and ``repro`` (one row as a
standalone script, ``repro_script``, to hand upstream)."""
