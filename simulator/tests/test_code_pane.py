"""The code pane's excerpts: committed from Debian's linux-source-6.12, one per mirrored function."""

from kstep.engine import Source
from kstep.lab.source import excerpts, index as source_index
from kstep.models import MODELS, make_model
from kstep.views import code


def all_labels():
    """Every (mechanism, variant, label, source) whose source is kernel code (a step outside the
    kernel, such as a lock's critical section, has none to show)."""
    for mech, cls in MODELS.items():
        for variant in cls.variants:
            model = make_model(mech, variant)
            for label, where in model.sources().items():
                if where.path:
                    yield mech, variant, label, where


def test_the_excerpts_say_where_they_come_from():
    data = excerpts.load()
    assert (data["package"], data["version"], data["release"]) == (source_index.PACKAGE, source_index.VERSION,
                                                                  "6.12.117")


def test_every_step_of_every_variant_has_its_function_and_marks_its_own_lines():
    data = excerpts.load()["excerpts"]
    unmarked = []
    for mech, variant, label, where in all_labels():
        ex = data[str(where)]
        lines = ex["text"].split("\n")
        assert where.function in ex["text"], f"{mech}/{variant}: {label}: the excerpt of {where} does not name it"
        marked = code.marked_lines(label, where, lines)
        if not marked and label != where.function:
            unmarked.append(f"{mech}/{variant}: {label} in {where}")
    assert unmarked == [], "a step inside a function marks the lines it stands for (code.ANCHORS)"


def test_an_anchored_step_marks_the_code_it_stands_for():
    lines = excerpts.load()["excerpts"]["mm/memory.c:lock_vma_under_rcu"]["text"].split("\n")
    marked = [lines[i].strip() for i in code.marked_lines("check_detached", Source("mm/memory.c", "lock_vma_under_rcu"), lines)]
    assert marked == ["if (vma->detached) {", "vma_end_read(vma);", "count_vm_vma_lock_event(VMA_LOCK_MISS);",
                      "goto retry;"]
    lines = excerpts.load()["excerpts"]["include/linux/mm.h:vma_start_read"]["text"].split("\n")
    assert [lines[i].strip() for i in code.marked_lines("down_read_trylock", Source("include/linux/mm.h", "vma_start_read"), lines)] == [
        "if (unlikely(down_read_trylock(&vma->vm_lock->lock) == 0))"]


def test_the_committed_excerpts_are_what_the_tree_has(linux_tree):
    assert excerpts.build_all(linux_tree) == excerpts.load()
