"""Reports: results as a long-form frame (``frames``), the statistics (``stats``), the verdicts
(``row_verdicts``, ``ran_changes``, ``numerics_verdicts``, ``autotuning``, ``series``; ``verdicts`` names
them for the command line), the gate (``release_gate``), the analysis (``analysis``), the sections as data
(``model``; ``sections`` orders them from ``answer``, ``next_steps`` and the ``*_sections`` modules over
``table_values``), their writers (``markdown``, ``html``, ``plots``, ``digest``, ``verdict_json``,
``render``), and the ``report``/``compare`` commands (``folders``, ``sides``, ``terminal``)."""
