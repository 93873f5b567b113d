"""A history of qualification runs: every result document kept as it came (content-addressed), and an
index derived from them (SQLite) that the site is built from.

layout.py (the folder: its version, its lock, what may be in it), store.py (the documents, by content),
facts.py (what the index keeps of a document: its context, build and rows), index.py (the SQLite index:
written to a new file and renamed into place), add.py (history add and reindex), listing.py (history list).
"""
