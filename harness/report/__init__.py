"""Reports, in layers: the analysis (``analysis/``), the writers (``writers/``), the sections (``sections/``),
then ``render`` (every file of a report) and ``digest`` (what CI reads), and at the top the ``pipeline``
that loads results folders (or the two sides of a ``compare``: ``sides``) and runs the rest."""
