"""The optional interfaces beside ``Model``: a model gets an interface's behaviour only by inheriting
it, so a member written without the interface, or one the interface's default hides, would be
ignored without a word.  Both are checked here on every mechanism's class and on the tso wrapper."""

import pytest

from kstep.engine import display, memory_model, progress, reductions, timing
from kstep.engine.display import Display
from kstep.engine.explore import FixedChoices, fixed_choices
from kstep.engine.memory_model import MemoryAccess, StoreBuffered
from kstep.engine.model import Model
from kstep.engine.program import ProgramModel
from kstep.engine.progress import Progress
from kstep.engine.reductions import Reductions
from kstep.engine.timing import Timing
from kstep.engine.trace import Recorded, recorded
from kstep.models import MODELS
from kstep.scenario_spec.expect import Expectations, functions

INTERFACES = (Reductions, Timing, MemoryAccess, Progress, Recorded, FixedChoices, Expectations, Display)
CLASSES = sorted(MODELS.values(), key=lambda c: c.name) + [StoreBuffered]


def members(interface: type) -> set[str]:
    return {name for name in vars(interface) if not name.startswith("_")}


def stray_members(cls: type) -> list[str]:
    """Members of an interface that ``cls`` defines (itself or through a base of its own: no interface,
    and not ProgramModel, which answers ``ordering`` for any model that declares MemoryAccess) without
    inheriting the interface: nothing in the engine would ever ask for them."""
    own = {name for base in cls.__mro__ if base not in INTERFACES and base not in (object, Model, ProgramModel)
           for name in vars(base)}
    return sorted(f"{name} ({interface.__name__})" for interface in INTERFACES
                  if not issubclass(cls, interface) for name in members(interface) & own)


def hidden_members(cls: type) -> list[str]:
    """Members whose first definition in ``cls``'s method order is an interface's default while a
    class after it defines them too (``MemoryAccess`` listed before ``ProgramModel`` would hide the
    steps' ``order=`` behind "every step is plain")."""
    out = []
    for interface in INTERFACES:
        if not issubclass(cls, interface):
            continue
        later = cls.__mro__[cls.__mro__.index(interface) + 1:]
        for name in members(interface):
            owner = next(base for base in cls.__mro__ if name in vars(base))
            hidden = next((base for base in later if name in vars(base)), None)
            if owner is interface and hidden is not None:
                out.append(f"{name} ({interface.__name__} hides {hidden.__name__}'s)")
    return sorted(out)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_member_of_an_interface_comes_with_it(cls):
    assert not stray_members(cls), f"{cls.__name__} writes members of interfaces it does not inherit"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_no_interface_default_hides_an_implementation(cls):
    assert not hidden_members(cls), f"{cls.__name__}: list the interface after the class that implements it"


def test_the_checks_find_a_stray_and_a_hidden_member():
    """The two checks above can fail: a model that names its shared memory without MemoryAccess, and
    one that lists MemoryAccess before ProgramModel (its steps' order= would never be read)."""
    stray = type("Stray", (ProgramModel,), {"memory_fields": ("words",), "progress_labels": frozenset()})
    assert stray_members(stray) == ["memory_fields (MemoryAccess)", "progress_labels (Progress)"]
    hidden = type("Hidden", (MemoryAccess, ProgramModel), {})
    assert hidden_members(hidden) == ["ordering (MemoryAccess hides ProgramModel's)",
                                      "word_stores (MemoryAccess hides ProgramModel's)"]


def test_what_each_mechanism_declares():
    """Which mechanism runs under tso, can be judged for liveness, records its states its own way,
    fixes choices explore does not branch on, offers [[expect]] helpers: as the verdict table and
    the pages have it."""
    declared = {name: sorted(i.__name__ for i in INTERFACES if issubclass(cls, i)) for name, cls in MODELS.items()}
    common = ["Display", "Expectations", "Reductions", "Timing"]
    assert declared == {
        "vma-locks": sorted(common + ["MemoryAccess", "Progress"]),
        "fork-batch": sorted(common + ["MemoryAccess", "Progress"]),
        "qspinlock": sorted(common + ["MemoryAccess", "Progress"]),
        "rcu": common,
        "damon": sorted(common + ["FixedChoices", "Recorded"]),
    }


def test_a_model_that_declares_nothing_gets_the_defaults():
    """The engine's fallbacks for a model that inherits no interface are what Model's own hooks were."""
    class Bare:
        pass

    bare = Bare()
    assert memory_model.of(bare).memory_fields == () and memory_model.of(bare).cpu_field is None
    assert memory_model.of(bare).ordering(None, None) == "plain"
    assert timing.of(bare).cost(None, None) == 1 and not timing.of(bare).work(None, type("A", (), {"label": "x"}), None)
    assert progress.of(bare).progress_labels == frozenset() and progress.of(bare).lasso_note(None) == ""
    assert recorded(bare).memory_model is None and recorded(bare).describe((1, frozenset({3, 2}))) == [1, [2, 3]]
    assert fixed_choices(bare) == "" and functions(bare) == {}
    assert reductions.of(bare).footprint(None, None) is None
    shown = display.of(bare)
    assert shown.what("x") == shown.acts_on(None, None) == shown.how_ended(None, "A") == ""
    assert shown.kernel_build(None) is None and shown.kernel_builds == ()
