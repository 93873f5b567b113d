"""The analysis, the report's lowest layer: results as a long-form frame (``frames``), the statistics
(``stats``), the verdicts (``row_verdicts``, ``ran_changes``, ``numerics_verdicts``, ``autotuning``), the
release axis (``series``), families (``families``), torch builds (``per_torch``), the gate
(``release_gate``), and what they found as one ``Analysis`` of a ``View`` (``model``, ``analyze``)."""
