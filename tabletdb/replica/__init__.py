"""A node's own replica: apply and read over `storage`, the stores of each table on this node,
the replica verbs and their wire form, and the locks of writes that derive view and index rows."""
