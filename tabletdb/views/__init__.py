"""Materialized views and secondary indexes: the rows derived from a base write, their
maintenance on the replicas, index reads, and builds over existing data."""
