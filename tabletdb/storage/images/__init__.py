"""Whole tablet files as images (layer 2, inside storage): a consistent copy of a live file pinned
without writing to it (``pinned_image``, with the committed WAL frames it carries: ``wal_frames``),
checks of a file that arrived from elsewhere before it is installed (``image_validation``), and the
set-based merge of a loaded or restored file into a live one (``image_merge``). Kept apart from the
row-level store because they treat a tablet as bytes, not rows.
"""
