"""Cluster topology beyond group0's membership record: the cluster features a node supports (and,
with the topology-coordinator issue, node states, requests and the pure coordinator step)."""
