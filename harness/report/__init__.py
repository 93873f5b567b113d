"""Reports: results as a long-form frame (``frames``), the statistics and verdicts (``stats``, ``verdicts``),
the analysis (``analysis``), the sections as data (``model``, ``sections``), their writers (``markdown``,
``html``, ``plots``, ``render``), and the ``report``/``compare`` commands (``folders``)."""
