"""Tablet maps, the tablet-count algorithm and replica allocation (layer 2, pure: no I/O).

Submodules: ``hints`` (table ``tablets = {...}`` options), ``count`` (how many tablets),
``tablet_map`` (the immutable per-table map), ``allocation`` (replicas for new tablets).
"""
