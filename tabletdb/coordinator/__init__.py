"""Coordinating a request across the replicas of a token: placement, consistency levels, read and
write coordination with read repair and timeouts, and the row reader that pages over them."""
