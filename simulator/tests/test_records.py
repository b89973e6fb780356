"""engine.records.fast_replace: the same copies as namedtuple's own _replace, only faster."""

from itertools import combinations
from typing import NamedTuple

import pytest

from kstep.engine.records import fast_replace


class Plain(NamedTuple):
    a: int
    b: tuple
    c: object = None


@fast_replace
class Fast(NamedTuple):
    a: int
    b: tuple
    c: object = None


def test_every_choice_of_fields_gives_namedtuples_copy():
    plain, fast = Plain(1, (2, 3)), Fast(1, (2, 3))
    changes = {"a": 7, "b": (), "c": None}  # None too: a value equal to the default is still a change asked for
    for n in range(len(changes) + 1):
        for names in combinations(changes, n):
            kw = {k: changes[k] for k in names}
            got = fast._replace(**kw)
            assert type(got) is Fast and tuple(got) == tuple(plain._replace(**kw)), kw


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError):
        Fast(1, ())._replace(d=1)
