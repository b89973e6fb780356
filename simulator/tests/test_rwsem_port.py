"""The C rw_semaphore rules every port shares (kernel-lab/common/rwsem.c) against the model's
(kstep.models.vma_locks.rwsem) on the same scripts of calls: after each call, the same owner,
readers, wait list and count.  The ports' own tests replay logs through the model, but no fork-batch
schedule sets HANDOFF before a reader arrives (fork is the only writer there, and readers wait for
VMA locks only by trylock), and the vma-locks port reaches it by timing alone, so a reader stealing
past HANDOFF would pass them; here a script reaches it every time."""

import random
import subprocess

import pytest

import labmake
from kstep.models.vma_locks import rwsem as rw

SCRIPTS, CALLS, THREADS = 300, 40, 4
HANDOFF_THEN_A_READER = "r 0\nw 1\nt 1\nu 0\nr 2\n"  # the writer waited past the timeout; then a reader comes


@pytest.fixture(scope="module")
def checkers():
    p = labmake.make("ARCH=x86_64", "build/x86_64/rwsem-check", "build/x86_64/rwsem-check-steals")
    if p.returncode:
        pytest.fail(f"building rwsem-check failed:\n{(p.stdout + p.stderr)[-3000:]}")
    return {name: labmake.LAB / "build" / "x86_64" / name for name in ("rwsem-check", "rwsem-check-steals")}


def call(sem: rw.Rwsem, op: str, i: int) -> rw.Rwsem:
    """The model's functions for one line of rwsem-check's script."""
    if op == "r":
        return rw.add_reader(sem, i) if rw.read_trylock_ok(sem) else rw.read_slowpath(sem, i)[0]
    if op == "w":
        for attempt in (rw.write_trylock, rw.optimistic_spin):
            taken = attempt(sem, i)
            if taken.owner == i:
                return taken
        return rw.queue_writer(sem, i)
    if op == "t":
        return rw.write_retry(sem, i, timed_out=True)
    if op == "u":
        sem, wake = rw.up_read(sem, i)
        return rw.rwsem_wake(sem) if wake else sem
    if op == "U":
        return rw.up_write(sem)
    assert op == "d"
    return rw.downgrade(sem, i)


def shown(sem: rw.Rwsem) -> str:
    """What rwsem-check prints for the rwsem."""
    count = (sem.owner != rw.NOBODY) | (2 if sem.waiters else 0) | (4 if sem.handoff else 0) | len(sem.readers) << 8
    readers = sum(1 << r for r in sem.readers)
    waiters = ",".join(f"{j}:{'w' if kind == rw.WRITE else 'r'}" for j, kind in sem.waiters)
    return f"count={c_hex(count)} owner={sem.owner} readers={c_hex(readers)} waiters={waiters}"


def c_hex(n: int) -> str:
    """printf's %#x: no 0x before a zero."""
    return f"{n:#x}" if n else "0"


def legal(sem: rw.Rwsem, i: int) -> list[str]:
    """The calls thread i may make: a queued reader makes none until it is granted the lock."""
    if sem.owner == i:
        return ["U", "d"]
    if rw.waiting(sem, i):
        return ["t"] if (i, rw.WRITE) in sem.waiters else []
    if rw.holds_read(sem, i):
        return ["u"]
    return ["r", "w"]


def drawn(seed: int) -> str:
    rng, sem, lines = random.Random(seed), rw.FREE, []
    for _ in range(CALLS):
        moves = [(op, i) for i in range(THREADS) for op in legal(sem, i)]
        if not moves:
            break
        op, i = rng.choice(moves)
        sem = call(sem, op, i)
        lines.append(f"{op} {i}")
    return "\n".join(lines) + "\n"


def expected(script: str) -> str:
    sem, out = rw.FREE, []
    for line in script.splitlines():
        op, i = line.split()
        sem = call(sem, op, int(i))
        out.append(shown(sem))
    return "\n".join(out) + "\n"


def run(binary, script: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary)], input=script, capture_output=True, text=True, timeout=60)


def follows(binary, script: str) -> bool:
    """The binary ran the script to its end, printing what the model gives."""
    p = run(binary, script)
    return p.returncode == 0 and p.stderr == "" and p.stdout == expected(script)


def test_the_c_rules_follow_the_model_on_drawn_scripts(checkers):
    scripts = [drawn(seed) for seed in range(SCRIPTS)]
    assert sum("t" in s and "r" in s for s in scripts) > SCRIPTS // 2  # the draws reach HANDOFF's paths
    for seed, script in enumerate(scripts):
        p = run(checkers["rwsem-check"], script)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        assert p.stdout == expected(script), f"script of seed {seed}:\n{script}"


def test_a_reader_waits_behind_handoff_in_c_as_in_the_model(checkers):
    want = expected(HANDOFF_THEN_A_READER)
    assert want.splitlines()[-1].endswith("waiters=1:w,2:r")  # the reader queues: HANDOFF keeps the lock for 1
    assert run(checkers["rwsem-check"], HANDOFF_THEN_A_READER).stdout == want


def test_a_reader_stealing_past_handoff_is_caught(checkers):
    """The mutated build (the steal ignores HANDOFF) differs from the model on the hand-written
    script and on some drawn one (printing another rwsem, or refusing a call the model's rwsem allows)."""
    assert not follows(checkers["rwsem-check-steals"], HANDOFF_THEN_A_READER)
    assert not all(follows(checkers["rwsem-check-steals"], s) for s in map(drawn, range(SCRIPTS)))
