"""The results folder: its layout and lock (``folder``), the documents in it (``documents``), what a run
keeps (``resume``)."""
