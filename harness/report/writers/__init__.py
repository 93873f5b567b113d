"""The writers, above the analysis: a report as data (``document``: sections of typed values), written as
Markdown (``markdown``), HTML (``html``) with plots (``plots``), verdict.json (``verdict_json``), and the
rows ``compare`` prints (``terminal``, ordered as ``choices`` names)."""
