"""Applying a ConfChange to a ConfState: simple changes and joint consensus (Raft thesis §4.3).

The rules that keep reconfiguration safe:

* a change with one item is a *simple* change; it alters the voter set by at most one node, so
  old and new majorities always intersect and no joint phase is needed;
* a change with several items *enters joint consensus*: the old voters become
  `voters_outgoing`, the items are applied to the incoming set, and decisions need both;
* `leave_joint` drops the outgoing set; no other change is accepted while joint.

A voter demoted to learner inside a joint change stays in `voters_outgoing` (it still votes for
the old half) and is listed in `learners` already; leaving the joint state makes it a plain
learner. Learners never overlap the incoming voters.
"""

from __future__ import annotations

from tabletdb.raft.errors import ConfChangeError
from tabletdb.raft.types import ConfChange, ConfChangeSingle, ConfChangeType, ConfState


def apply_conf_change(conf: ConfState, cc: ConfChange) -> ConfState:
    """The configuration after `cc`, or ConfChangeError saying why `cc` is not allowed now."""
    if cc.leave_joint:
        if cc.changes:
            raise ConfChangeError(f"leave_joint carries no changes, got {cc.changes}")
        if not conf.joint:
            raise ConfChangeError(f"cannot leave joint consensus: configuration {conf} is not joint")
        return ConfState(voters=conf.voters, learners=conf.learners)
    if not cc.changes:
        raise ConfChangeError("empty membership change")
    if conf.joint:
        raise ConfChangeError(f"configuration {conf} is joint; leave it before changing membership again")
    voters, learners = set(conf.voters), set(conf.learners)
    for single in cc.changes:
        _apply_single(voters, learners, single)
    if not voters:
        raise ConfChangeError(f"change {cc} would remove every voter from {conf}")
    if len(cc.changes) == 1:
        return ConfState(voters=frozenset(voters), learners=frozenset(learners))
    return ConfState(voters=frozenset(voters), learners=frozenset(learners), voters_outgoing=conf.voters)


def _apply_single(voters: set[int], learners: set[int], single: ConfChangeSingle) -> None:
    if single.node <= 0:
        raise ConfChangeError(f"node ids are positive, got {single.node} in {single}")
    if single.type == ConfChangeType.ADD_VOTER:
        learners.discard(single.node)
        voters.add(single.node)
    elif single.type == ConfChangeType.ADD_LEARNER:
        voters.discard(single.node)
        learners.add(single.node)
    else:
        voters.discard(single.node)
        learners.discard(single.node)


def members(conf: ConfState) -> frozenset[int]:
    """Every node that receives the log: voters of either half and learners."""
    return conf.voters | conf.voters_outgoing | conf.learners


def is_voter(conf: ConfState, node: int) -> bool:
    """Whether `node` votes in either half of `conf` (may campaign, counts toward quorums)."""
    return node in conf.voters or node in conf.voters_outgoing
