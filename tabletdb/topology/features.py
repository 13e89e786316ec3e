"""The cluster features this build supports, as the node advertises them to group0.

A feature is enabled in the cluster only when every member supports it (group0.topology).
``TABLETDB_TEST_UNSUPPORTED_FEATURES`` (comma-separated) removes features from this node's set:
the test-only way to start a node that looks like an older build.
"""

from __future__ import annotations

import os

BATCH_FEATURE = "TABLETDB_GROUP0_SCHEMA_BATCHES"
"""group0 entries may carry several schema commands (`group0.cluster_state.BatchEntry`)."""

VIEW_BUILD_STATUS_FEATURE = "VIEW_BUILD_STATUS_ON_GROUP0"
"""group0 has view build status entries (`group0.view_builds`); ScyllaDB's feature name."""

SUPPORTED_FEATURES: tuple[str, ...] = (
    BATCH_FEATURE,
    VIEW_BUILD_STATUS_FEATURE,
    "GROUP0_SCHEMA_VERSIONING",
    "SUPPORTS_RAFT_CLUSTER_MANAGEMENT",
    "TABLETS",
)
TEST_DROP_ENV = "TABLETDB_TEST_UNSUPPORTED_FEATURES"


def supported_features() -> frozenset[str]:
    """This node's supported features, minus any the test-only environment variable drops."""
    dropped = {f.strip() for f in os.environ.get(TEST_DROP_ENV, "").split(",") if f.strip()}
    return frozenset(SUPPORTED_FEATURES) - dropped
