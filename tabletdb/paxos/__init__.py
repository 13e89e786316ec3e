"""Lightweight transactions, conditional batches and counters: Paxos rounds across a partition's
replicas (the pure proposer and acceptor, their messages, and the node's Paxos service)."""
