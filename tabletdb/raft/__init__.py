"""Raft for group0: a deterministic, sans-I/O core plus its durable log.

Map of the package (import from the modules; this file re-exports nothing so that importing
one piece never drags in the others):

* `types` — the shared vocabulary (Entry, Message, HardState, ConfState, Ready, Config, ...).
* `codec` — msgpack encoding of those values for the wire and the disk.
* `core.RaftNode` — the state machine: `tick`, `step`, `propose`, `propose_conf_change`,
  `read_index`, `transfer_leadership`, `campaign`, `report_unreachable`, `report_snapshot`,
  then `has_ready` / `ready` / `advance`. `leader` and `follower` hold its two halves.
* `log.LogView` — what the core reads from persisted state; `log.MemoryLog` implements it in
  memory; `log.bootstrap_state` is the founding members' starting snapshot.
* `raftlog`, `progress`, `quorum`, `readonly`, `confchange` — the core's internal pieces.
* `errors` — what local requests may raise (NotLeaderError, ProposalDroppedError, ConfChangeError).
* `storage*` — the durable, checksummed log on disk.
"""
