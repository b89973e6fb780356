"""The code pane's excerpts: committed from Debian's linux-source-6.12, one per mirrored function."""

from kstep.engine import Source
from kstep.source import excerpts, index as source_index
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
        arches[name] = ex.model.kernel_build(ex.start)
    assert arches["contpte-arm64"] == "arm64" and arches["pinned-folio"] in ("x86-64", "arm64", "ppc64le")


def test_an_architectures_excerpts_mark_each_steps_lines():
    """Every architecture's own code marks each step's lines (a configuration's stubs have none to mark:
    CONFIG_PER_VMA_LOCK=n's vma_start_read has no down_read_trylock)."""
    data = excerpts.load()["builds"]
    unmarked = []
    for mech, variant, label, where in all_labels():
        for arch, table in data.items():
            ex = table.get(str(where))
            if ex is None or excerpts.BUILDS[arch][1]:
                continue
            built = Source.parse(ex["where"])
            if not code.marked_lines(label, built, ex["text"].split("\n")) and label != built.function:
                unmarked.append(f"{arch}: {mech}/{variant}: {label} in {built}")
    assert unmarked == []


def shown_in_scenario(mech: str, variant: str, scenario_name: str) -> dict[str, str]:
    """Per function of ``mech``'s steps (by the name the model cites), the code the pane shows for its steps
    when ``variant`` runs the bundled ``scenario_name``: the kernel build its model names for that run."""
    from kstep.scenario_spec import scenario

    model = make_model(mech, variant)
    sc = scenario.load(mech, MODELS[mech].scenario_schema, scenario_name)
    build = model.kernel_build(model.initial(sc.config))
    sources = model.sources()
    labels = sorted(label for label, where in sources.items() if where.path)
    t = code.tables(labels, sources, set(labels), build)
    return {sources[label].function: "\n".join(t["excerpts"][c["excerpt"]]["lines"]) if c else ""
            for label, c in zip(labels, t["code"])}


def test_no_per_vma_lock_is_shown_the_stubs_config_per_vma_lock_n_builds():
    """Without CONFIG_PER_VMA_LOCK (the kernel before 6.4) lock_vma_under_rcu is include/linux/mm.h's stub
    returning NULL, vma_start_read returns false and vma_start_write is empty: not the =y bodies the
    default variant shows, which walk the maple tree and compare mm_lock_seq."""
    per_vma = shown_in_scenario("vma-locks", "v6.12", "fork-vs-fault")
    without = shown_in_scenario("vma-locks", "no-per-vma-lock", "fork-vs-fault")
    assert "mas_walk" in per_vma["lock_vma_under_rcu"] and "mm_lock_seq" in per_vma["vma_start_read"]
    assert "__is_vma_write_locked" in per_vma["vma_start_write"]
    assert "return NULL;" in without["lock_vma_under_rcu"] and "mas_walk" not in without["lock_vma_under_rcu"]
    assert "{ return false; }" in without["vma_start_read"] and "mm_lock_seq" not in without["vma_start_read"]
    assert without["vma_start_write"] == "static inline void vma_start_write(struct vm_area_struct *vma) {}"


def test_one_pending_bit_is_shown_the_word_wide_atomics_of_16k_cpus():
    """With _Q_PENDING_BITS == 1 (16K CPUs or more) clear_pending, clear_pending_set_locked and xchg_tail
    work on the whole word (atomic_andnot, atomic_add, a cmpxchg loop), not on the pending byte and the
    16-bit tail the 8-bit layout's versions store."""
    byte = shown_in_scenario("qspinlock", "v6.12", "pending-path")
    bit = shown_in_scenario("qspinlock", "v6.12", "one-bit-pending")
    assert "WRITE_ONCE(lock->pending, 0);" in byte["clear_pending"]
    assert "atomic_andnot(_Q_PENDING_VAL, &lock->val);" in bit["clear_pending"]
    assert "WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL);" in byte["clear_pending_set_locked"]
    assert "atomic_add(-_Q_PENDING_VAL + _Q_LOCKED_VAL, &lock->val);" in bit["clear_pending_set_locked"]
    assert "xchg_relaxed(&lock->tail" in byte["xchg_tail"]
    assert "atomic_try_cmpxchg_relaxed(&lock->val, &old, new)" in bit["xchg_tail"]
    assert "lock->tail" not in bit["xchg_tail"]


def test_every_build_a_model_names_is_one_the_excerpts_have():
    data = excerpts.load()["builds"]
    for mech, cls in MODELS.items():
        for build in cls.kernel_builds:  # every model is a Display (ProgramModel is)
            assert build in excerpts.BUILDS and build in data, f"{mech}: {build}"
