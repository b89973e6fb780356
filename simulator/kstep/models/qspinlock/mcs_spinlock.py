"""kernel/locking/mcs_spinlock.h of Linux 6.12: the MCS lock's contended wait and hand-off, as the
qspinlock slow path (and powerpc's queue) calls them.

``arch_mcs_spin_lock_contended()`` waits on our own node's ``locked`` (``mcs_spin``, enabled by
``handed_off``); ``arch_mcs_spin_unlock_contended()`` sets the successor's (``mcs_handoff``).  The
programs register them at the point of their slow paths that calls them.
"""

from __future__ import annotations

from ...engine import Frame, push
from .state import HANDOFFS_FIELD, LINKS_FIELD, NULL, ghost_dequeue, own_node, set_ctx, set_field, set_node


def mcs_spin(s, i, arg):
    """arch_mcs_spin_lock_contended(&node->locked): our turn has come; read node->next."""
    t = s.threads[i]
    me = own_node(t)
    nxt = s.nodes[me].next
    s = set_field(s, HANDOFFS_FIELD, s.ghost_handoffs - {me})
    if nxt != NULL:
        s = set_field(s, LINKS_FIELD, s.ghost_links - {(me, nxt)})
    return set_ctx(s, i, next=nxt)


def handed_off(s, i, arg):
    """Its wait ends when the predecessor has set our node's locked."""
    return s.nodes[own_node(s.threads[i])].locked != 0


def mcs_handoff(s, i, arg):
    """arch_mcs_spin_unlock_contended(&next->locked): the successor becomes the queue head."""
    t = s.threads[i]
    s = ghost_dequeue(set_node(s, t.next, locked=1), t.lock, own_node(t))
    s = set_field(s, HANDOFFS_FIELD, s.ghost_handoffs | {t.next})
    return push(s, i, (Frame("release_node"),))
