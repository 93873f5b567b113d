"""The plan: ``matrix.yaml`` loaded and checked (``matrix``) into Cells and a Plan (``model``)."""
