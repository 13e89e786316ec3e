"""Tablet maps, the tablet-count algorithm, replica allocation and balancing (layer 2, pure: no I/O).

Submodules: ``hints`` (table ``tablets = {...}`` options), ``count`` (how many tablets),
``tablet_map`` (the immutable per-table map), ``allocation`` (replicas for new tablets),
``migration`` (stage-by-stage migration and replica selectors), ``balancer`` (migration planning),
``wire`` (plain encoding for group0).
"""
