"""Every label a model can take names a function that exists in Linux 6.12 (the committed index)."""

import pytest

from kstep.lab import source_index
from kstep.models import MODELS


def all_locations():
    for mech, cls in MODELS.items():
        for variant in cls.variants:
            model = cls(variant)
            for label, source in model.locations().items():
                yield mech, variant, label, str(source)


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_every_label_exists_in_linux_6_12(mech):
    missing = sorted({f"{label} -> {loc}" for m, v, label, loc in all_locations()
                      if m == mech and not source_index.exists(loc)})
    assert not missing, "labels naming functions not in Linux 6.12:\n" + "\n".join(missing)


def test_every_step_says_what_the_kernel_does():
    for mech, cls in MODELS.items():
        model = cls()
        for label in model.sources():
            assert len(model.what(label)) > 15, (mech, label)


def test_a_wrong_location_would_be_caught():
    assert not source_index.exists("mm/memory.c:vma_start_read")  # right function, wrong file
    assert source_index.exists("include/linux/mm.h:vma_start_read")


def test_a_broken_step_says_it_is_broken():
    """The player shows a step's `what`: in a broken variant the replaced steps must not claim to
    do what the kernel does."""
    for mech, cls in MODELS.items():
        for name, variant in cls.variants.items():
            model = cls(name)
            for label in variant.replaces:
                if label in model.sources():
                    expected = f"broken ({name})" if variant.broken else cls().what(label)
                    assert model.what(label).startswith(expected), (mech, name, label)
