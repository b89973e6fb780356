"""The explorer's visited set: every bundled reachable state survives its compact encoding."""

import pytest
from support import bundled_runs, load, reachable

from kstep.engine.codec import WIDE, Codec


@pytest.mark.parametrize("mech,name,variant", bundled_runs(small=5_000))
def test_decode_encode_round_trip_on_every_reachable_state(mech, name, variant):
    m, _, s0 = load(mech, name, variant)
    codec = Codec(s0)
    codes = {}
    for s in reachable(m, s0):
        code = codec.encode(s)
        assert codec.decode(code) == s
        assert codes.setdefault(code, s) == s  # different states never share an encoding
    assert len(codes) == len(set(codes.values()))


def test_encoding_is_canonical_and_widens_past_254_components():
    codec = Codec((tuple((k,) for k in range(3)), "x"))
    first = codec.encode(((((1,),) * 2), "x"))
    assert codec.encode(((((1,),) * 2), "x")) == first  # an index, once given, never changes
    for k in range(300):
        codec.encode((((k,),), k))
    wide = codec.encode((((299,),), 299))
    assert wide[0] == WIDE and codec.decode(wide) == (((299,),), 299)
    assert codec.decode(first) == ((((1,),) * 2), "x")


def test_a_state_that_is_not_a_tuple_is_interned_whole():
    codec = Codec(frozenset({1}))
    assert codec.decode(codec.encode(frozenset({2, 3}))) == frozenset({2, 3})
