"""The kernel lab compiles DAMON's region functions and folio_pte_batch() from the tree, and they end
where the model's do.

kernel-lab/scripts/kernel-functions copies mm/damon/core.c's and vaddr.c's region functions whole
from the fetched tree into build/src/damon-regions.c; damon-regions/ adds only stand-ins (types,
allocation, lists, locks, damon_rand over SplitMix64, counts). Here: every copy is the tree's text
byte for byte and a changed copy is named; and kernel-lab/tests/regioncheck.py's identity (the
kernel's function and the model's on one input, the whole state after compared) holds on a seeded
sample of every bundled scenario's operations and of drawn cases, on every architecture, and fails
for a build with `<` for `<=` in the merge threshold. ``make -C kernel-lab identity`` runs the
1,000-per-function version. Likewise kernel-lab/tests/ptebatchcheck.py: mm/internal.h's
folio_pte_batch() over x86-64's own PTE helpers against every call the fork model makes on x86-64
layouts (bundled and drawn), and a build whose __pte_batch_clear_ignored() keeps the accessed bit. And
kernel-lab/tests/copycheck.py: mm/memory.c's copy_present_ptes() with the rmap dup functions, refcount and
pin queries and copy_present_page() it calls, against every such call on those layouts (the folio counts,
PageAnonExclusive, rss, return value and the child's entries), and a dup that forgets a page's mapcount.
"""

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import labmake

from kstep.source.index import definition_lines

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "kernel-lab"
sys.path.insert(0, str(LAB / "tests"))
import contptecheck  # noqa: E402
import copycheck  # noqa: E402
import ptebatchcheck  # noqa: E402
import regioncheck  # noqa: E402

ARCHES = [pytest.param("x86_64"), pytest.param("arm64", marks=pytest.mark.qemu),
          pytest.param("ppc64le", marks=pytest.mark.qemu)]
COPIED = ["damon_new_region", "damon_add_region", "damon_del_region", "damon_free_region", "damon_destroy_region",
          "damon_intersect", "damon_fill_regions_holes", "damon_set_regions", "damon_nr_regions",
          "damon_merge_two_regions", "damon_merge_regions_of", "kdamond_merge_regions", "damon_split_region_at",
          "damon_split_regions_of", "damon_moving_sum", "damon_update_region_access_rate",
          "damon_va_evenly_split_region", "sz_range", "__damon_va_three_regions"]
LINE = re.compile(r'^#line (\d+) "([^"]+)"$', re.M)
DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)")
PER_FUNCTION = 40  # drawn cases per function and architecture in make test
PER_SCENARIO = 25  # cases per bundled scenario and operation


PTE_BATCH_MACROS = ["_AT", "_PAGE_BIT_PRESENT", "_PAGE_BIT_RW", "_PAGE_BIT_ACCESSED", "_PAGE_BIT_DIRTY",
                    "_PAGE_BIT_SOFTW2", "_PAGE_BIT_SOFTW3", "_PAGE_BIT_SOFTW5", "_PAGE_BIT_UFFD_WP",
                    "_PAGE_BIT_SOFT_DIRTY", "_PAGE_BIT_SAVED_DIRTY", "_PAGE_PRESENT", "_PAGE_RW", "_PAGE_ACCESSED",
                    "_PAGE_DIRTY", "_PAGE_SOFT_DIRTY", "_PAGE_UFFD_WP", "_PAGE_SAVED_DIRTY", "_PAGE_DIRTY_BITS"]
PTE_BATCH_COPIED = PTE_BATCH_MACROS + [
                    "__pte_needs_invert", "protnone_mask", "native_make_pte", "native_pte_val", "pte_flags",
                    "pte_dirty", "pte_shstk", "pte_young", "pte_write", "pte_pfn", "pte_set_flags", "pte_clear_flags",
                    "mksaveddirty_shift", "pte_mksaveddirty", "pte_wrprotect", "pte_mkclean", "pte_mkold",
                    "pte_clear_soft_dirty", "pte_same", "pte_advance_pfn", "pte_batch_hint", "ptep_get",
                    "__pte_batch_clear_ignored", "folio_pte_batch", "native_set_pte", "ptep_set_wrprotect",
                    "pte_clear_uffd_wp", "set_ptes", "wrprotect_ptes", "is_cow_mapping", "userfaultfd_wp",
                    "__copy_present_ptes"]
FORK_COPY_COPIED = ["PAGE_MAPPING_ANON", "folio_test_anon", "PF_POISONED_CHECK", "PF_ANY", "PageAnonExclusive",
                    "SetPageAnonExclusive", "ClearPageAnonExclusive", "page_ref_count", "folio_ref_count",
                    "page_ref_add", "folio_ref_add", "page_ref_sub", "folio_ref_sub", "page_ref_inc", "folio_ref_inc",
                    "page_ref_dec_and_test", "MMF_HAS_PINNED", "VM_WRITE", "VM_SOFTDIRTY", "put_page_testzero",
                    "folio_put_testzero", "folio_get", "folio_put", "GUP_PIN_COUNTING_BIAS", "folio_maybe_dma_pinned",
                    "folio_needs_cow_for_dma", "mm_counter_file", "vma_soft_dirty_enabled", "RMAP_EXCLUSIVE",
                    "__folio_rmap_sanity_checks", "__folio_dup_file_rmap", "folio_dup_file_rmap_ptes",
                    "folio_dup_file_rmap_pte", "__folio_try_dup_anon_rmap", "folio_try_dup_anon_rmap_ptes",
                    "folio_try_dup_anon_rmap_pte", "_PAGE_BIT_SOFTW1", "_PAGE_BIT_SPECIAL", "_PAGE_SPECIAL",
                    "pte_special", "pte_uffd_wp", "pte_mkuffd_wp", "pte_mkdirty", "pte_mkwrite_novma",
                    "pte_mkwrite_shstk", "clear_saveddirty_shift", "pte_clear_saveddirty", "pte_mkwrite",
                    "maybe_mkwrite", "userfaultfd_pte_wp", "set_pte_at", "copy_present_page", "copy_present_ptes"]
ARM64_FORK_COPY_COPIED = (FORK_COPY_COPIED[:FORK_COPY_COPIED.index("_PAGE_BIT_SOFTW1")]
                          + ["mk_pte", "pte_uffd_wp", "pte_mkuffd_wp", "pte_mkwrite_novma", "pte_mkwrite"]
                          + FORK_COPY_COPIED[FORK_COPY_COPIED.index("maybe_mkwrite"):])
LAYOUTS = 25  # drawn x86-64 fork layouts in make test
ARM64_COPY_LAYOUTS = 10  # drawn arm64 fork layouts of copycheck.py in make test (tens of calls each)
ARM64_LAYOUTS = 1  # drawn arm64 fork layouts in make test (one is thousands of calls, under qemu-aarch64)
CONTPTE_COPIED = ["_AT", "__AC", "_AC", "__ALIGN_KERNEL", "__ALIGN_KERNEL_MASK", "ALIGN_DOWN", "PTR_ALIGN_DOWN",
                  "TLB_FLUSH_VMA", "PAGE_SHIFT", "PAGE_SIZE", "MT_NORMAL_TAGGED", "pte_val", "__pte", "pgprot_val",
                  "__pgprot", "CONT_PTE_SHIFT", "CONT_PTES", "CONT_PTE_SIZE", "CONT_PTE_MASK", "PTE_VALID",
                  "PTE_TYPE_MASK", "PTE_TYPE_PAGE", "PTE_USER", "PTE_RDONLY", "PTE_AF", "PTE_NG", "PTE_DBM", "PTE_CONT",
                  "PTE_PXN", "PTE_UXN", "PTE_ADDR_LOW", "PTE_ATTRINDX", "PTE_ATTRINDX_MASK", "PTE_WRITE", "PTE_DIRTY",
                  "PTE_SPECIAL", "PTE_PRESENT_INVALID", "PTE_UFFD_WP", "__pte_to_phys", "__phys_to_pte_val", "pte_pfn",
                  "pfn_pte", "pte_page", "pte_present", "pte_young", "pte_special", "pte_write", "pte_rdonly",
                  "pte_user", "pte_user_exec", "pte_cont", "pte_tagged", "pte_cont_addr_end", "pte_hw_dirty",
                  "pte_sw_dirty", "pte_dirty", "pte_valid", "pte_present_invalid", "pte_valid_not_user",
                  "pte_valid_cont", "clear_pte_bit", "set_pte_bit", "pte_mkclean", "pte_mkdirty", "pte_wrprotect",
                  "pte_mkold", "pte_mkyoung", "pte_mkcont", "pte_mknoncont", "pte_access_permitted_no_overlay",
                  "__set_pte_nosync", "__set_pte", "__ptep_get", "__check_safe_pte_update", "__sync_cache_and_tags",
                  "pte_pgprot", "pte_advance_pfn", "__set_ptes", "__ptep_get_and_clear", "___ptep_set_wrprotect",
                  "__ptep_set_wrprotect", "__wrprotect_ptes", "contpte_try_fold", "contpte_try_unfold", "pte_same",
                  "mm_is_user", "contpte_align_down", "contpte_try_unfold_partial", "contpte_convert",
                  "__contpte_try_fold", "__contpte_try_unfold", "contpte_ptep_get", "contpte_set_ptes",
                  "contpte_wrprotect_ptes", "pte_batch_hint", "ptep_get", "set_ptes", "wrprotect_ptes",
                  "pte_clear_soft_dirty", "__pte_batch_clear_ignored", "folio_pte_batch", "pte_clear_uffd_wp",
                  "is_cow_mapping", "userfaultfd_wp", "__copy_present_ptes"]
EDGE_LAYOUTS = 1  # edge_layout() draws in make test: each has a whole block of order-0 folios, and order-4 ones
# side by side
# the contpte builds with a folio-end mutation (kernel-lab/Makefile)
FOLIO_END_MUTANTS = ("contpte-fold-across-folios", "contpte-batch-past-folio-end")


@pytest.fixture(scope="module")
def built(linux_tree):
    arches = [p.values[0] for p in ARCHES]
    targets = [f"build/{a}/damon-regions{m}" for a in arches for m in ("", "-merge-lt")]
    targets += [f"build/x86_64/fork-pte-batch{m}" for m in ("", "-keeps-young")]
    targets += [f"build/{a}/fork-copy{m}" for a in ("x86_64", "arm64") for m in ("", "-dup-skips-mapcount")]
    targets += [f"build/arm64/contpte{m}" for m in ("", "-get-drops-dirty", "-fold-across-folios",
                                                    "-batch-past-folio-end", "-copy-keeps-young")]
    p = labmake.make("-s", "-j2", f"LINUX={linux_tree}", *targets)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]


def copied_name(body: list[str]) -> str:
    """The name a copy defines: a macro's after #define, a function's before its parameter list."""
    macro = DEFINE.match(body[0])
    return macro.group(1) if macro else re.search(r"(\w+)\(", " ".join(body[:2])).group(1)


def copies(generated: Path) -> list[tuple[int, str, list[str]]]:
    """(first line, path, lines) of each copy in a generated file, as its #line names them."""
    text = generated.read_text()
    marks = list(LINE.finditer(text))
    return [(int(mark.group(1)), mark.group(2),
             text[mark.end() + 1:after.start() if after else len(text)].rstrip("\n").split("\n"))
            for mark, after in zip(marks, marks[1:] + [None])]


def copies_differing(generated: Path, tree: Path) -> list[str]:
    """The copies in a generated file that are not the tree's definition, byte for byte, at the line
    its #line names (a function: the whole definition the source index finds there)."""
    out = []
    for first, path, body in copies(generated):
        lines = (tree / path).read_text().split("\n")
        name = copied_name(body)
        whole = DEFINE.match(body[0]) or definition_lines("\n".join(lines), name) == (first, first + len(body) - 1)
        if lines[first - 1:first - 1 + len(body)] != body or not whole:
            out.append(f"{path}:{first}: {name}")
    return out


@pytest.mark.parametrize(("name", "copied"), [("damon-regions", COPIED), ("fork-pte-batch", PTE_BATCH_COPIED),
                                              ("fork-copy", FORK_COPY_COPIED),
                                              ("arm64/fork-copy", ARM64_FORK_COPY_COPIED), ("contpte", CONTPTE_COPIED)])
def test_the_compiled_functions_are_the_trees_byte_for_byte(built, linux_tree, name, copied):
    generated = LAB / "build" / "src" / f"{name}.c"
    assert [copied_name(body) for _, _, body in copies(generated)] == copied
    assert copies_differing(generated, linux_tree) == []


@pytest.mark.parametrize(("mutant", "named"), [
    ("damon-regions-merge-lt/damon-regions.c", ["mm/damon/core.c:1801: damon_merge_regions_of"]),
    ("fork-pte-batch-keeps-young/fork-pte-batch.c",
     ["mm/internal.h:168: __pte_batch_clear_ignored", "mm/memory.c:950: __copy_present_ptes"]),
    ("fork-copy-dup-skips-mapcount/fork-copy.c", ["include/linux/rmap.h:391: __folio_try_dup_anon_rmap"]),
    ("arm64/fork-copy-dup-skips-mapcount/fork-copy.c", ["include/linux/rmap.h:391: __folio_try_dup_anon_rmap"]),
    ("contpte-get-drops-dirty/contpte.c", ["arch/arm64/mm/contpte.c:155: contpte_ptep_get"]),
    ("contpte-fold-across-folios/contpte.c", ["arch/arm64/mm/contpte.c:76: __contpte_try_fold"]),
    ("contpte-batch-past-folio-end/contpte.c", ["mm/internal.h:204: folio_pte_batch"]),
    ("contpte-copy-keeps-young/contpte.c", ["mm/memory.c:950: __copy_present_ptes"]),
])
def test_a_changed_copy_is_named(built, linux_tree, mutant, named):
    assert copies_differing(LAB / "build" / "src" / mutant, linux_tree) == named


HEADER = """#ifndef GUARD
#define GUARD
#ifdef CONFIG_A
#define M 1
#else
#define M 0
#endif
#if defined(CONFIG_B) && CONFIG_LEVELS >= 5
#define N(x) \\
	((x) + 1)
#elif !defined(CONFIG_B)
#define N(x) (x)
#endif
#endif
"""


@pytest.mark.parametrize(("config", "copied"), [
    (["--config", "CONFIG_A,CONFIG_B,CONFIG_LEVELS=5"],
     "#line 4 \"h.h\"\n#define M 1\n\n#line 9 \"h.h\"\n#define N(x) \\"),
    ([], "#line 6 \"h.h\"\n#define M 0\n\n#line 12 \"h.h\"\n#define N(x) (x)\n"),
    (["--config", "CONFIG_A,CONFIG_B"], None),
])
def test_a_macro_is_the_one_definition_the_configuration_builds(tmp_path, config, copied):
    """kernel-functions copies a macro as cpp would see it under the modelled architecture's Kconfig symbols;
    none (CONFIG_LEVELS undefined is 0 in an #if) stops the build, naming it."""
    (tmp_path / "h.h").write_text(HEADER)
    p = subprocess.run([sys.executable, str(LAB / "scripts" / "kernel-functions"), str(tmp_path), str(tmp_path / "o.c"),
                        *config, "h.h:M", "h.h:N"], capture_output=True, text=True)
    if copied is None:
        assert p.returncode == 1 and "defines no N in h.h" in p.stderr and "\n" not in p.stderr.rstrip()
    else:
        assert p.returncode == 0, p.stderr
        assert copied in (tmp_path / "o.c").read_text()


ARCH_HEADER = """#if 3 - defined(CONFIG_A) - \\
	defined(CONFIG_B) == 1
#define LEVELS_OK
#endif
#ifdef CONFIG_PA_52
static inline long to_phys(long pte)
{
	return pte | 1;
}
#else
#define to_phys(pte) (pte)
#endif
"""


@pytest.mark.parametrize(("config", "copied"), [
    ("CONFIG_PA_52,CONFIG_A,CONFIG_B", "#line 6 \"h.h\"\nstatic inline long to_phys(long pte)\n{\n"),
    ("CONFIG_A", "#line 11 \"h.h\"\n#define to_phys(pte) (pte)\n"),
])
def test_a_function_is_the_one_definition_the_configuration_builds(tmp_path, config, copied):
    """arm64's __pte_to_phys is a function under CONFIG_ARM64_PA_BITS_52 and a macro otherwise: the copy is
    the one the configuration compiles, and an #if of sums continued over two lines is read."""
    (tmp_path / "h.h").write_text(ARCH_HEADER)
    p = subprocess.run([sys.executable, str(LAB / "scripts" / "kernel-functions"), str(tmp_path), str(tmp_path / "o.c"),
                        "--config", config, "h.h:to_phys"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert copied in (tmp_path / "o.c").read_text()


def drawn_seed() -> int:
    seed = random.randrange(1 << 32)
    print(f"drawn cases from seed {seed} (regioncheck.py --seed {seed} repeats them)")
    return seed


@pytest.fixture(scope="module")
def scenario_cases():
    return regioncheck.scenario_cases(PER_SCENARIO, seed=random.randrange(1 << 32))


@pytest.mark.parametrize("arch", ARCHES)
def test_the_kernels_functions_end_where_the_models_do(arch, built, scenario_cases):
    cases = regioncheck.drawn_cases(drawn_seed(), PER_FUNCTION)
    # a run calls damon_merge_two_regions() and damon_split_region_at() only through their callers
    assert {c.op for c in scenario_cases} == set(regioncheck.OPERATIONS) - {"merge_two", "split_region_at"}
    bad = regioncheck.differences(arch, scenario_cases + cases)
    assert not bad, f"{len(bad)} of {len(scenario_cases) + len(cases)} cases differ; the first:\n{bad[0]}"


def test_a_build_with_a_changed_merge_threshold_is_caught(built, scenario_cases):
    bad = regioncheck.differences("x86_64", scenario_cases + regioncheck.drawn_cases(drawn_seed(), PER_FUNCTION),
                                  "damon-regions-merge-lt")
    assert bad and {m.split()[1] for m in bad} <= {"merge_regions_of", "kdamond_merge_regions"}


@pytest.fixture(scope="module")
def fork_traces():
    first = random.randrange(1 << 32)
    print(f"x86-64 layouts drawn from seed {first} on (ptebatchcheck.py and copycheck.py --first-seed {first} "
          "repeat them)")
    return ptebatchcheck.scenario_runs() + ptebatchcheck.drawn_runs(first, LAYOUTS)


@pytest.fixture(scope="module")
def fork_runs(fork_traces):
    runs = fork_traces
    return ([c for trace, origin in runs for c in ptebatchcheck.calls(trace, origin)],
            [c for trace, origin in runs for c in ptebatchcheck.copies(trace, origin)])


def test_the_kernels_folio_pte_batch_and_copy_do_what_the_models_do(built, fork_runs):
    calls, copies = fork_runs
    assert calls and copies and any(c.src_flags & ptebatchcheck.VM_SHARED for c in copies)
    bad = ptebatchcheck.differences(calls) + ptebatchcheck.copy_differences(copies)
    assert not bad, f"{len(bad)} of {len(calls) + len(copies)} calls differ; the first:\n{bad[0]}"


def test_a_build_that_keeps_the_accessed_bit_is_caught(built, fork_runs):
    calls, copies = fork_runs
    assert ptebatchcheck.differences(calls, "fork-pte-batch-keeps-young")
    assert ptebatchcheck.copy_differences(copies, "fork-pte-batch-keeps-young")


@pytest.fixture(scope="module")
def copy_calls(fork_traces):
    return [c for trace, origin in fork_traces for c in copycheck.calls(trace, origin)[0]]


def test_the_kernels_copy_present_ptes_leaves_the_folio_counts_the_model_does(built, copy_calls):
    """copy_present_ptes() and the rmap functions it calls, from the tree: each folio's _refcount,
    _large_mapcount, every page's _mapcount and PageAnonExclusive, the rss vector, the return value and
    the child's entries, on every way out (the bundled pinned-folio scenario takes the copy and -EAGAIN)."""
    ways = copycheck.paths(copy_calls)
    assert all(not way.startswith("0 ") for way in ways.split(", ")), ways
    bad = copycheck.differences(copy_calls)
    assert not bad, f"{len(bad)} of {len(copy_calls)} calls differ; the first:\n{bad[0]}"


def assert_only_counts_differ(bad: list[str]):
    """Each message's kernel and model lines differ before the parent's entries, not in the tables."""
    assert bad
    for message in bad:
        kernel, model = (line.split(" parent ") for line in message.split("\n")[1:3])
        assert kernel[0].split()[1:] != model[0].split()[1:] and kernel[1] == model[1], message


def test_a_dup_that_forgets_a_pages_mapcount_is_caught(built, copy_calls):
    """__folio_try_dup_anon_rmap() that raises _large_mapcount but not each page's _mapcount: the counts
    differ, the entries do not."""
    assert_only_counts_differ(copycheck.differences(copy_calls, "fork-copy-dup-skips-mapcount"))


def folded(call, table: str) -> int:
    """The entries of a call's parent ("ptes") or child ("child") table before it that have PTE_CONT."""
    words = next(line for line in call.text.split("\n") if line.startswith(table + " ")).split()[2:]
    return sum(bool(int(w) & contptecheck.PTE_CONT) for w in words)


def folded_after(call) -> int:
    """The entries of a call's child table after it that have the model's cont bit, as the model has them."""
    return sum(bool(int(w, 16) & contptecheck.pt.PTE_CONT) for w in call.want.split(" child ")[1].split())


@pytest.fixture(scope="module")
def arm64_copy_calls():
    first = random.randrange(1 << 32)
    print(f"arm64 layouts drawn from seed {first} on (copycheck.py --arch arm64 --first-seed {first} --edge-layouts 1 "
          "repeats them)")
    fmt = copycheck.ARCHES["arm64"].fmt
    runs = (ptebatchcheck.scenario_runs(fmt) + ptebatchcheck.drawn_runs(first, ARM64_COPY_LAYOUTS, fmt)
            + copycheck.edge_runs(first, EDGE_LAYOUTS))
    return [c for trace, origin in runs for c in copycheck.calls(trace, origin, "arm64")[0]]


@pytest.mark.qemu
def test_the_kernels_copy_present_ptes_over_contpte_leaves_what_the_model_does(built, arm64_copy_calls):
    """The same copy_present_ptes() over arm64's helpers with contpte.c behind them, on the model's arm64
    contpte layouts, both page tables whole: the same counts, and both tables' entries after (a block
    wrprotect_ptes() unfolds in the parent, one set_ptes() folds in the child)."""
    ways = copycheck.paths(arm64_copy_calls)
    assert not ways.startswith("0 a batch"), ways
    assert any(folded(c, "ptes") for c in arm64_copy_calls)  # a copy from a folded block of the parent
    assert any(folded_after(c) > folded(c, "child") for c in arm64_copy_calls)  # a copy that folds the child's
    bad = copycheck.differences(arm64_copy_calls, arch="arm64")
    assert not bad, f"{len(bad)} of {len(arm64_copy_calls)} calls differ; the first:\n{bad[0]}"


@pytest.mark.qemu
def test_an_arm64_dup_that_forgets_a_pages_mapcount_is_caught(built, arm64_copy_calls):
    assert_only_counts_differ(copycheck.differences(arm64_copy_calls, "fork-copy-dup-skips-mapcount", "arm64"))


@pytest.fixture(scope="module")
def contpte_calls():
    first = random.randrange(1 << 32)
    print(f"arm64 layouts drawn from seed {first} on (contptecheck.py --first-seed {first} repeats them)")
    return contptecheck.runs_calls(first, ARM64_LAYOUTS, EDGE_LAYOUTS)


@pytest.mark.qemu
def test_the_kernels_contpte_helpers_do_what_the_models_arm64_format_does(built, contpte_calls):
    """arm64's ptep_get, pte_batch_hint, wrprotect_ptes and set_ptes with contpte.c behind them, and
    folio_pte_batch() and __copy_present_ptes() over them, compiled for arm64 and run under qemu-aarch64,
    on every call the model makes: the PTE, hint or batch (and its any_writable) returned, the whole table
    after (both, for a copy), and the loads, stores, atomics and TLB flushes of page-table memory."""
    ops = {c.op for c in contpte_calls}
    assert ops == {"get", "hint", "wrprotect", "set", "batch", "copy"}
    # a folded block's batch, which pte_batch_hint() makes in one turn
    assert any(c.op == "batch" and c.ret == contptecheck.pt.CONT_PTES and c.ops[0] == 0 for c in contpte_calls)
    assert any(c.op == "wrprotect" and c.ops[3] for c in contpte_calls)  # an unfold: contpte_convert's flush
    assert any(c.op == "set" and c.ops[3] for c in contpte_calls)  # a fold of the child's block
    bad = contptecheck.differences(contpte_calls)
    assert not bad, f"{len(bad)} of {len(contpte_calls)} calls differ; the first:\n{bad[0]}"


@pytest.mark.qemu
@pytest.mark.parametrize("binary", FOLIO_END_MUTANTS)
def test_a_contpte_build_that_stops_at_the_wrong_place_at_a_folios_end_is_caught(built, contpte_calls, binary):
    """A block folded over a folio's end, or a batch run past it, differs on the edge layouts, whose
    first runs are a whole block of order-0 folios and order-4 folios side by side with the same bits."""
    edges = [c for c in contpte_calls if c.origin.startswith("edge layout")]
    bad = contptecheck.differences(edges, binary)
    assert bad, f"{binary} is not caught on {len(edges)} calls of the edge layouts"


@pytest.mark.qemu
def test_a_contpte_build_whose_copy_keeps_the_accessed_bit_is_caught(built, contpte_calls):
    bundled = [c for c in contpte_calls if "layout" not in c.origin]  # young entries are copied there
    bad = contptecheck.differences(bundled, "contpte-copy-keeps-young")
    assert bad and {m.split(": ")[1].split()[0] for m in bad} == {"copy"}


@pytest.mark.qemu
def test_a_contpte_build_that_drops_the_blocks_dirty_bits_is_caught(built, contpte_calls):
    bundled = [c for c in contpte_calls if not c.origin.startswith("layout")]
    assert contptecheck.differences(bundled, "contpte-get-drops-dirty")


# Each kernel-code port's stand-ins, and where its README and kernel-lab/README.md's table count their lines.
SHIMS = {
    "damon-regions": (("damon-regions/regions_internal.h", "damon-regions/include/linux/*.h"),
                      "damon-regions/README.md", r"## The shims: (\d+) lines"),
    "fork-pte-batch": (("fork-pte-batch/pte_internal.h",), "fork-batch/README.md",
                       r"`fork-pte-batch/pte_internal.h`, are (\d+) lines"),
    "fork-copy": (("fork-copy/copy_internal.h",), "fork-batch/README.md",
                  r"`fork-copy/copy_internal.h`, are (\d+) lines"),
    "contpte": (("contpte/contpte_internal.h",), "contpte/README.md", r"`contpte_internal.h` is (\d+) lines"),
}


@pytest.mark.parametrize("port", SHIMS)
def test_each_ports_readme_counts_its_shims_lines(port):
    """Issue 23: each port's README gives its shims' line count; the count is the files' own."""
    patterns, readme, said = SHIMS[port]
    lines = sum(len(f.read_text().splitlines()) for p in patterns for f in LAB.glob(p))
    table = re.search(rf"^\| `{port}/` \|[^\n]*?(\d+) lines of stand-ins", (LAB / "README.md").read_text(), re.M)
    assert [int(re.search(said, (LAB / readme).read_text()).group(1)), int(table.group(1))] == [lines, lines]


def test_merge_of_products_past_64_bits(built):
    big = 1 << 44  # 16 TiB regions with nr_accesses near UINT_MAX: the products pass 2^64
    rs = (regioncheck.core.Region(0, big, 0xFFFF_0000), regioncheck.core.Region(big, 2 * big, 0xFFFF_FFF0))
    assert regioncheck.differences("x86_64", [regioncheck.Case("merge_two", (0,), rs)]) == []


# fork-copy's, built for either architecture
FORK_COPY_BAD = [
    ("hello\n", "stdin line 1: a line is not the one the case format has next"),
    ("case\nmm 0\nvma 1 2\n", "stdin line 3: vma takes FLAGS DST_FLAGS PROT"),
    ("case\nmm 0\nvma 0 0 33\nfolio 1024 3 0 1 0 0\n", "stdin line 4: a folio is NR (a power of two up to 512)"),
    ("case\nmm 0\nvma 0 0 33\nprealloc 0\nptes 1 4194403\nchild 1 0\ncopy 0 0 1\nend\n",
     "stdin line 8: an entry maps a page of no folio"),
    ("case\nmm 0\nvma 0 0 33\nprealloc 0\nptes 1 4194403\nchild 2 0 0\n",
     "stdin line 6: child N takes as many words as ptes N"),
    ("case\nmm 0\nvma 0 0 33\nprealloc 0\nptes 1 4194403\nchild 1 0\ncopy 7 0 1\n",
     "stdin line 7: copy VPN I NR: VPN a multiple of 512"),
    ("case\nmm 0\nvma 0 0 33\nprealloc 0\nptes 1 4194403\nchild 1 0\ncopy 0 0 2\n",
     "stdin line 7: copy VPN I NR: VPN a multiple of 512, entries I to I + NR - 1 in the table"),
    ("case\nmm -1\n", "stdin line 2: not a decimal number"),
]


@pytest.mark.parametrize(("harness", "text", "message"), [
    ("damon-regions", "case\nattrs 1 2\n", "stdin line 2: 'attrs' takes 5 numbers, not 2"),
    ("damon-regions", "case\nattrs 1 2 3 4 5\nrng -1\n", "stdin line 3: '-1' is not a decimal number"),
    ("damon-regions", "case\nattrs 1 2 3 4 5\nrng 0\nregions 0\nmerge_two 0\nend\n",
     "stdin line 5: there is no region 0"),
    ("damon-regions", "case\nattrs 1 2 3 4 5\nrng 0\nregions 0\nfrobnicate\nend\n", "unknown operation 'frobnicate'"),
    *(("fork-copy", text, message) for text, message in FORK_COPY_BAD),
    ("fork-pte-batch", "case\nvma 8\n", "stdin line 2: folio PFN NR_PAGES or vma SRC_FLAGS DST_FLAGS"),
    ("fork-pte-batch", "case\nfolio 1 2\nflags 0\nptes 1 3\nbatch 0 2\nend\n",
     "stdin line 5: the batch must start at an entry and stay inside the table"),
    ("fork-pte-batch", "case\nvma 8 8\nptes 1 3\ncopy 3\n", "stdin line 4: the input ends inside a case"),
])
def test_bad_input_to_an_x86_64_harness_is_one_line_and_exit_2(built, harness, text, message):
    p = subprocess.run([str(LAB / "build" / "x86_64" / harness)], input=text, capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr


@pytest.mark.qemu
@pytest.mark.parametrize(("text", "message"), [
    ("hello\n", "stdin line 1: a case starts with case"),
    ("case\nfirst 0 7\n", "stdin line 2: a case starts with first PFN VPN, VPN a multiple of PTRS_PER_PTE"),
    ("case\nfirst 0 0\nfolios 1 99999999 2\n", "stdin line 3: a PFN outside the case's pages"),
    ("case\nfirst 0 0\nfolios 0\nptes 2 3\n", "stdin line 4: ptes N, then N PTE words"),
    ("case\nfirst 0 0\nfolios 0\nptes 1 3\nget 600\nend\n", "stdin line 5: an operation on an entry outside the table"),
    ("case\nfirst 0 0\nfolios 0\nptes 1 3\nwrprotect 500 20\nend\n", "stdin line 5: get I, hint I PTE, wrprotect I NR"),
])
def test_the_contpte_harness_names_bad_input_in_one_line_and_exits_2(built, text, message):
    p = subprocess.run(["qemu-aarch64", str(LAB / "build" / "arm64" / "contpte")], input=text, capture_output=True,
                       text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr


@pytest.mark.qemu
@pytest.mark.parametrize(("text", "message"), FORK_COPY_BAD)
def test_bad_input_to_the_arm64_copy_harness_is_one_line_and_exit_2(built, text, message):
    p = subprocess.run(["qemu-aarch64", str(LAB / "build" / "arm64" / "fork-copy")], input=text, capture_output=True,
                       text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, p.stderr
