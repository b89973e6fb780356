"""Every label a model can take names a function that exists in Linux 6.12 (the committed index)."""

import pytest

from kstep.engine import replay
from kstep.engine.model import RELEASE
from kstep.source import index as source_index
from kstep.models import MODELS


def all_locations():
    for mech, cls in MODELS.items():
        for variant in cls.variants:
            model = cls(variant)
            for label, source in model.locations().items():
                yield mech, variant, label, source


# Steps that are no kernel code, each on purpose, with whose code they are.  Every other label
# names a Linux 6.12 function.
OUTSIDE_THE_KERNEL = {
    ("qspinlock", "critical_section"): "spin_lock()'s caller",
}


@pytest.mark.parametrize("mech", sorted(MODELS))
def test_every_label_exists_in_linux_6_12(mech):
    missing = sorted({f"{label} -> {source}" for m, v, label, source in all_locations()
                      if m == mech and source.in_kernel and not source_index.exists(str(source))})
    assert not missing, "labels naming functions not in Linux 6.12:\n" + "\n".join(missing)


@pytest.mark.slow  # 3.8 s in session 16's quiet clean clone: make test runs it, make test-fast does not
def test_every_source_fits_the_trace_format():
    """A trace records each step's source, and show refuses a trace whose sources break its schema."""
    schema = replay.schema()["properties"]["steps"]["items"]["properties"]["source"]
    for _mech, _variant, _label, source in all_locations():
        replay.jsonschema().validate(str(source), schema)


def test_only_the_listed_steps_are_outside_the_kernel():
    outside = {(m, label): source.function for m, v, label, source in all_locations() if not source.in_kernel}
    assert outside == OUTSIDE_THE_KERNEL


def test_every_step_says_what_the_kernel_does():
    for mech, cls in MODELS.items():
        model = cls()
        for label in model.sources():
            assert len(model.what(label)) > 15, (mech, label)


def test_a_wrong_location_would_be_caught():
    assert not source_index.exists("mm/memory.c:vma_start_read")  # right function, wrong file
    assert source_index.exists("include/linux/mm.h:vma_start_read")


def test_every_variant_says_what_its_own_steps_do():
    """The player and the step table show a step's text.  A variant step that runs another body, or
    waits for another condition, says what it does in its own text -- never the default's -- and a
    step a variant leaves alone keeps the default's text; a broken one says it is broken."""
    for mech, cls in MODELS.items():
        for name, variant in cls.variants.items():
            model = cls(name)
            for label, step in model.table.steps.items():
                default = model.program.steps[label]
                replaced = (step.run, step.guard) != (default.run, default.guard)
                # a bug only a weaker memory model shows (its litmus test named), or a release whose step
                # differs only in its barrier (6.12.0's smp_store_release where 6.12.117 has smp_wmb and
                # a plain increment), keeps the body, which sc and tso run alike, and says in its own
                # text which barrier it has
                replaced = replaced or (("litmus" in variant.params or variant.kind == RELEASE)
                                        and label in variant.replaces)
                assert replaced == (step.what != default.what), (mech, name, label, step.what)
                if replaced and variant.broken:
                    assert step.what.startswith(f"broken ({name}): "), (mech, name, label)
