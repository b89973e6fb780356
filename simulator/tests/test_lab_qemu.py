"""Boot Debian's Linux 6.12 once per architecture and check what the probes saw (marker qemu).

These fail, not skip, when qemu-system or the fetched kernels are missing: ``make test`` fetches
the kernels first (``kstep lab fetch``) and ``make setup`` installs qemu-system.  Times are never
asserted: the checks marked as timing ones are left to ``kstep lab run``.
"""

import shutil

import pytest

from kstep.lab.guest import qemu as guest, kernels, probes

pytestmark = pytest.mark.qemu

QUICK = list(guest.PROBES)  # vma, fork, damon, qspin: one boot of about a minute per architecture


@pytest.fixture(scope="module")
def fetched():
    k = kernels.load()
    if k is None:
        pytest.fail("no kernels fetched: run 'kstep lab fetch' (make test does)")
    return k


@pytest.mark.parametrize("arch", list(guest.MACHINES))
def test_the_real_kernel_agrees_with_the_model(arch, fetched):
    if shutil.which(guest.MACHINES[arch].qemu) is None:
        pytest.fail(f"{guest.MACHINES[arch].qemu} is missing: run 'make setup'")
    result = guest.run(arch, fetched, QUICK, say=print)
    # run() already refused a boot whose nonce, uname -r or /proc/version disagree; hold it to that.
    assert result["uname_r"] == fetched.release(arch)
    assert fetched.package_version(arch) in result["proc_version"]
    assert [c["name"] for c in result["cases"]] == QUICK
    failed = [c for c in probes.judge(result) if not c.ok and not c.timing]
    assert not failed, failed
