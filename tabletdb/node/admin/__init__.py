"""A node's administration surface: the REST API (ScyllaDB's paths) and Prometheus metrics."""
