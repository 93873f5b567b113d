"""A version-matrix benchmark harness: which PyTorch x cuDNN combination should we ship?

Data flows one way: matrix -> plan -> (images) -> runs -> results -> reports.
The in-cell side lives in ``harness.suite`` and imports nothing from the rest of the package.
"""

__version__ = "0.1.0"
