"""The virtual `system.*` tables rendered from group0 and the node's state, and SELECT over
rendered rows."""
