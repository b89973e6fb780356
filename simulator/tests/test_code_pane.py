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


STUBBED = """\
#ifdef CONFIG_PER_VMA_LOCK
static inline void vma_mark_detached(struct vm_area_struct *vma, bool detached)
{
	vma->detached = detached;
}
#else /* CONFIG_PER_VMA_LOCK */
static inline void vma_mark_detached(struct vm_area_struct *vma,
                                     bool detached) {}
static inline void vma_mark_detached_spare(struct vm_area_struct *vma,
                                     bool detached) {}
#endif
"""


def test_a_function_with_a_stub_is_excerpted_from_the_body_the_configuration_builds(tmp_path):
    """6.12's include/linux/mm.h defines vma_mark_detached twice: the body under CONFIG_PER_VMA_LOCK, which
    the models mirror, and a stub for kernels without it.  The stub wraps over two lines, so it is the
    longer one and the first is not always the body: the excerpt must be the one the configuration builds."""
    (tmp_path / "include" / "linux").mkdir(parents=True)
    (tmp_path / "include" / "linux" / "mm.h").write_text(STUBBED)
    body = excerpts.excerpt(tmp_path, "include/linux/mm.h", "vma_mark_detached")
    assert body["line"] == 2 and "vma->detached = detached;" in body["text"]
    (tmp_path / "include" / "linux" / "mm.h").write_text(STUBBED.replace("#ifdef", "#ifndef"))
    assert excerpts.excerpt(tmp_path, "include/linux/mm.h", "vma_mark_detached")["line"] == 7


def test_the_committed_excerpts_are_the_mirrored_builds():
    """The committed file, read without the tree: vma_mark_detached is the CONFIG_PER_VMA_LOCK body (not
    the stub), xchg_tail the 16-bit exchange of 8,192-CPU kernels (not the one-pending-bit cmpxchg loop),
    smp_load_acquire the SMP one, and __wait_rcu_gp is found past an #if of IS_MODULE()."""
    data = excerpts.load()["excerpts"]
    assert "vma->detached = detached;" in data["include/linux/mm.h:vma_mark_detached"]["text"]
    assert "xchg_relaxed(&lock->tail" in data["kernel/locking/qspinlock.c:xchg_tail"]["text"]
    assert "__smp_load_acquire(p)" in data["include/asm-generic/barrier.h:smp_load_acquire"]["text"]
    assert "kernel/rcu/update.c:__wait_rcu_gp" in data


def test_each_architecture_is_shown_the_code_it_builds():
    """A fork on arm64 steps through contpte's ptep_get, pte_batch_hint, wrprotect_ptes and set_ptes, not the
    generic ones; flush_tlb_mm is each architecture's own; GUP-fast's ptep_get_lockless is ptep_get on 64-bit
    x86, not x86-32 PAE's retry loop (the longest definition), and arm64's contpte one."""
    sources = {label: where for variant in MODELS["fork-batch"].variants
               for label, where in make_model("fork-batch", variant).sources().items()}
    labels = sorted(sources)
    shown = {arch: {label: t["excerpts"][c["excerpt"]] for label, c in zip(labels, t["code"]) if c}
             for arch in ("x86-64", "arm64", "ppc64le")
             for t in [code.tables(labels, sources, set(labels), arch)]}
    for label in ("ptep_get", "pte_batch_hint", "wrprotect_ptes", "set_ptes", "ptep_get_lockless"):
        assert shown["arm64"][label]["where"] == f"arch/arm64/include/asm/pgtable.h:{label}"
        assert shown["x86-64"][label]["where"] == f"include/linux/pgtable.h:{label}"
    assert "contpte_ptep_get(ptep, pte)" in "\n".join(shown["arm64"]["ptep_get"]["lines"])
    assert [s["where"] for s in (shown[a]["flush_tlb_mm"] for a in ("x86-64", "arm64", "ppc64le"))] == [
        "arch/x86/include/asm/tlbflush.h:flush_tlb_mm", "arch/arm64/include/asm/tlbflush.h:flush_tlb_mm",
        "arch/powerpc/include/asm/book3s/64/tlbflush.h:flush_tlb_mm"]
    assert shown["ppc64le"]["set_ptes"]["where"] == "arch/powerpc/mm/pgtable.c:set_ptes"
    lockless = "\n".join(shown["x86-64"]["ptep_get_lockless"]["lines"])
    assert "return ptep_get(ptep);" in lockless and "pte_low" not in lockless


def test_a_fork_scenario_names_the_architecture_its_pte_format_is_from():
    import kstep
    from kstep.scenario_spec import scenario

    arches = {}
    for name in scenario.bundled("fork-batch"):
        ex = kstep.open("fork-batch", name, variant="folio-batch")
        arches[name] = ex.model.arch(ex.start)
    assert arches["contpte-arm64"] == "arm64" and arches["pinned-folio"] in ("x86-64", "arm64", "ppc64le")


def test_an_architectures_excerpts_mark_each_steps_lines():
    data = excerpts.load()["arches"]
    unmarked = []
    for mech, variant, label, where in all_labels():
        for arch, table in data.items():
            ex = table.get(str(where))
            if ex is None:
                continue
            built = Source.parse(ex["where"])
            if not code.marked_lines(label, built, ex["text"].split("\n")) and label != built.function:
                unmarked.append(f"{arch}: {mech}/{variant}: {label} in {built}")
    assert unmarked == []
