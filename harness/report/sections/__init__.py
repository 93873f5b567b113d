"""The sections, above the writers: each module builds sections from a ``SectionContext`` (``context``),
and ``contents`` lists them in the order a reader meets them."""
