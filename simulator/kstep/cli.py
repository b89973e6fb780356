"""kstep's command line, in the tradition of the OSTEP homework simulators.

    kstep list [MECH] [--schema]
    kstep run MECH --scenario S [-s SEED | -P SCHEDULE | --round-robin | --timed [--costs F]] [--memory-model sc|tso]
              [-c] [--json F] [--html F]
    kstep explore MECH --scenario S [--memory-model sc|tso] [--max-states N] [--no-symmetry] [--no-por]
                  [--no-dead-vars] [--hash-compact]
                  [--states F [--columns A,B]] [--dot F] [--json F] [--html F]
    kstep explore MECH --scenario S --liveness [--max-states N] [--json F] [--html F]
    kstep show TRACE.json [--html F] [--steps FILE.py]
    kstep check MECH LOG
    kstep litmus FILE.litmus [--model sc|tso|arm64|power|lkmm|all] [--html F [-s SEED]]
    kstep grade EXERCISE SUBMISSION [--student ID] [--config COURSE.toml] [--out DIR] | --batch DIR
    kstep release --config COURSE.toml --roster CSV --out DIR
    kstep lab fetch [--refresh] | doctor | run --arch A [--smp N] [PROBE...] | show RESULT.json

``run`` prints a problem: the step table with ``?`` where the student must work out the state;
``-c`` computes the answers.  ``explore`` checks every interleaving and gives a verdict.  ``show``
re-runs a saved trace's scheduler and prints the run only if the file says what that run does.
``check`` replays an observation log written by the kernel-lab C port, step by step, against the
model.  A scenario file, a trace or a log named ``-`` is read from standard input.

Exit status:
  0    ok (explore: clean, the whole state space was searched; check: every logged step is one the model allows, and the run finished)
  1    a violation, a deadlock, a lasso (explore --liveness: starvation or livelock) or an illegal step: found by explore or check (check: also a log whose run did not finish), or the end of the run that run or show prints
  2    bad input, explained in one line on stderr
  3    bounded or inconclusive: explore stored --max-states states and met one more, or --hash-compact found nothing (never clean)
  70   internal error: a bug in kstep, reported with its traceback (EX_SOFTWARE)
  130  interrupted (explore: Ctrl-C, with what the search found so far)
  141  broken pipe: the reader of the output went away (128 + SIGPIPE)

This module only parses, formats and chooses exit codes; the models, schedulers, explorer,
scenarios and traces are the library's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import sys
import textwrap
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Optional, Sequence

from . import __version__
from .caught import caught, lively
from .engine import Random, RoundRobin, Scripted, progress, reductions, replay
from .engine.memory_model import MEMORY_MODELS
from .engine.explore import fixed_choices
from .engine.graph import dot, state_graph
from .engine.liveness import LIVELOCK, describe
from .engine.model import BUG, IMPLEMENTATION, KINDS, RELEASE, by_kind
from .engine import costs
from .engine.schedule import LONGEST_RUN, schedule_text
from .engine.timed import STEP_COSTS, Timed
from .engine.trace import recorded
from .errors import UserError, shorten
from .experiment import Experiment
from .experiment import open as kstep_open
from .files import SMALL_CAP, STDIN, check_output, read_text, replacing, same_file, write_text
from .models import MODELS, make_model, model_class
from .scenario_spec import expect, questions
from .scenario_spec import scenario as scenarios
from .scenario_spec.runs import own_schedule
from .views.presentation import present

OK, VIOLATION, BAD_INPUT, BOUNDED, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 70, 130
BROKEN_PIPE = 128 + signal.SIGPIPE
# The one exit-status table: the module docstring above, the README and --help show it, and
# test_cli checks that they agree with it.
EXIT_STATUS = (
    (OK, "ok (explore: clean, the whole state space was searched; check: every logged step is one the model "
         "allows, and the run finished)"),
    (VIOLATION, "a violation, a deadlock, a lasso (explore --liveness: starvation or livelock) or an illegal step: "
                "found by explore or check (check: also a log whose "
                "run did not finish), or the end of the run that run or show prints"),
    (BAD_INPUT, "bad input, explained in one line on stderr"),
    (BOUNDED, "bounded or inconclusive: explore stored --max-states states and met one more, or --hash-compact "
              "found nothing (never clean)"),
    (INTERNAL, "internal error: a bug in kstep, reported with its traceback (EX_SOFTWARE)"),
    (INTERRUPTED, "interrupted (explore: Ctrl-C, with what the search found so far)"),
    (BROKEN_PIPE, "broken pipe: the reader of the output went away (128 + SIGPIPE)"),
)
MAX_SEED = 2**64 - 1  # SplitMix64 takes a 64-bit seed, and a trace records it as a non-negative integer
EXPLORE_MAX_STATES = 1_000_000
DOT_LIMIT = 2_000  # the largest state graph --dot draws (a bigger one is no picture a reader can use)
MAX_STATES = 100_000_000  # the most --max-states allows
MAX_JOBS = 64  # sandboxed graders at once: far more than the cores of any machine that grades
MAX_SMP = 64  # lab run --smp: virtual CPUs of one TCG guest, far more than the probes use
MAX_GUEST_SECONDS = 86_400  # lab run --timeout: a day
WIDTH = 96  # where descriptions wrap
MAX_MESSAGE = 600  # characters of a bad-input line: whatever the input held, the reason stays one readable line

# Characters that would break a one-line message or a table row: C0/C1 controls, the Unicode line
# and paragraph separators, and lone surrogates (a filename that was not UTF-8).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_DECIMAL = re.compile(r"-?[0-9]+")  # ASCII digits only: int() also takes '١٢', '1_0' and ' 7 '


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    utf8_stdio()
    try:
        try:
            status = dispatch(argv)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit flush
            return status
        except UserError as e:
            say(f"kstep: {shorten(clean(str(e)), MAX_MESSAGE)}")
            return BAD_INPUT
        except KeyboardInterrupt:
            say("kstep: interrupted")
            return INTERRUPTED
        except BrokenPipeError:
            raise
        except Exception:  # a bug in kstep: the traceback, and a status no verdict uses
            say(traceback.format_exc().rstrip("\n"))
            return INTERNAL
    except BrokenPipeError:  # `kstep run ... | head`, on stdout or stderr: the reader has seen enough
        for stream in (sys.stdout, sys.stderr):  # so nothing more is written, not even at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        return BROKEN_PIPE


def dispatch(argv: list[str]) -> int:
    for k, arg in enumerate(argv, start=1):
        if "\x00" in arg:  # no real command line can carry one; a path with it cannot be opened
            raise UserError(f"argument {k} contains a NUL character")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help and --version print and exit; errors raise UserError instead
        return e.code if isinstance(e.code, int) else OK
    return args.run(args)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def utf8_stdio() -> None:
    """kstep writes UTF-8 whatever the locale says (an ASCII locale cannot encode its tables), and a
    file name that is not UTF-8 as escapes (lone surrogates cannot be encoded at all)."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="backslashreplace")


def exit_status_lines() -> list[str]:
    return [f"  {code:<4} {meaning}" for code, meaning in EXIT_STATUS]


# --- parsing ------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse, with its errors turned into kstep's one line and exit status 2."""

    # Options may come between the positionals (``kstep grade EX --config C SUB``): argparse alone
    # gives both of two optional positionals to the first word and refuses the second.  Only for a
    # command without subcommands (parse_intermixed_args refuses those).
    intermixed = False

    def error(self, message: str):
        raise UserError(f"{message} (see '{self.prog} --help')")

    def parse_known_args(self, args=None, namespace=None):
        if not self.intermixed:
            return super().parse_known_args(args, namespace)
        self.intermixed = False  # the intermixed parse calls parse_known_args itself, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self.intermixed = True


def build_parser() -> Parser:
    top = Parser(
        prog="kstep",
        description="Step through how Linux 6.12 does concurrent memory management, one atomic step at a time.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    top.add_argument("--version", action="version", version=f"kstep {__version__}")
    sub = top.add_subparsers(title="commands", metavar="COMMAND", parser_class=Parser)

    p = sub.add_parser("list", help="mechanisms, their scenarios and variants", allow_abbrev=False,
                       description="Without MECH: every mechanism with its scenarios and variants. "
                                   "With MECH: its scenarios and variants explained.")
    p.add_argument("mechanism", nargs="?", metavar="MECH")
    p.add_argument("--schema", action="store_true",
                   help="also document the scenario file format of MECH, with legal ranges")
    p.set_defaults(run=cmd_list)

    p = sub.add_parser("run", help="run one interleaving and print it as a problem (-c: with answers)",
                       allow_abbrev=False,
                       description="Run a scenario under one schedule and print the step table; the state "
                                   "columns show '?' for you to work out unless -c computes them.")
    mechanism_and_scenario(p)
    how = p.add_mutually_exclusive_group()
    how.add_argument("-s", "--seed", type=seed, metavar="SEED",
                     help="random schedule from this seed (default: the scenario's schedule, else seed 1)")
    how.add_argument("-P", "--schedule", metavar="SCHEDULE",
                     help="scripted schedule: actor names, ACTOR:label for one named step, ACTOR*N repeats, "
                          "e.g. 'R*2 U rcu' (then round-robin)")
    how.add_argument("--round-robin", action="store_true", help="every runnable actor takes a step in turn")
    how.add_argument("--timed", action="store_true",
                     help="the actor whose clock is earliest steps next; each step costs its work and its cache-line "
                          "transfers in ns (the committed cost table, or --costs); prints makespan and waiting")
    p.add_argument("--costs", metavar="FILE", help="--timed: a cost table of your machine (make calibrate writes "
                                                   "build/costs.json)")
    p.add_argument("--steps", type=bounded(LONGEST_RUN), metavar="N",
                   help=f"stop after N steps (1..{LONGEST_RUN:,}; default {scenarios.SCENARIO_RUN:,}, or the steps a "
                        f"scenario whose runs never end declares)")
    p.add_argument("-c", "--compute", action="store_true", help="show the state columns, counters and outcome")
    memory_model_option(p)
    outputs(p, "the trace")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("explore", help="check every interleaving; exit 0 only when clean", allow_abbrev=False,
                       description="Breadth-first search of every reachable state.  Exit 0: clean (exhausted, "
                                   "every invariant holds); 1: violation or deadlock, with the shortest "
                                   "counterexample; 3: stopped at --max-states (or --hash-compact), NOT clean; "
                                   "130: Ctrl-C, with what it found so far.")
    mechanism_and_scenario(p)
    p.add_argument("--max-states", type=bounded(MAX_STATES), default=EXPLORE_MAX_STATES, metavar="N",
                   help=f"store at most N states, then expand those without storing and stop at the first "
                        f"new one (1..{MAX_STATES:,}; default {EXPLORE_MAX_STATES:,})")
    memory_model_option(p)
    p.add_argument("--no-symmetry", dest="symmetry", action="store_false",
                   help="store every state, not one per orbit of interchangeable CPUs")
    p.add_argument("--no-por", dest="por", action="store_false",
                   help="expand every enabled step, not only an ample set (partial-order reduction off)")
    p.add_argument("--no-dead-vars", dest="dead_vars", action="store_false",
                   help="store each state with every local's value, also those no step reads again "
                        "(dead-variable reduction off)")
    p.add_argument("--hash-compact", action="store_true",
                   help="store a 64-bit hash per state (less memory); never says clean: exit 3 with the "
                        "probability that a state was left out")
    p.add_argument("--states", metavar="FILE", help="write each stored state as a JSON line (under a reduction: the first "
                                                   "concrete state reached of each)")
    p.add_argument("--columns", metavar="A,B", type=lambda text: [c for c in text.split(",") if c],
                   help="with --states: only these fields of each state")
    p.add_argument("--dot", metavar="FILE", help=f"write the whole state graph as Graphviz text (scenarios of "
                                                 f"up to {DOT_LIMIT:,} states)")
    p.add_argument("--liveness", action="store_true",
                   help="look for starvation, livelock and deadlock instead (a scenario with repeat = \"forever\"; "
                        "no reductions): exit 1 with a lasso, stem then a cycle that repeats, or 0 when none")
    outputs(p, "the counterexample")
    p.set_defaults(run=cmd_explore)

    p = sub.add_parser("show", help="replay a saved trace: its table, answers and (--html) animation",
                       allow_abbrev=False)
    p.add_argument("trace", metavar="TRACE.json", help="a trace written by run --json or explore --json")
    p.add_argument("--html", metavar="FILE", help="write the animation as a standalone, offline HTML page")
    p.add_argument("--steps", metavar="FILE.py", help="a trace of an exercise's model with a student's steps "
                                                     "(a grader's counterexample): replay it through FILE.py's")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("check", help="replay an observation log (kernel-lab C port) against the model",
                       allow_abbrev=False,
                       description="Replay LOG, one logged step per line, through the model.  Exit 0: every "
                                   "step is one the model allows and the run finished; 1: the first one it does "
                                   "not allow, or a log that stops before the run finished (the line, and why); "
                                   "2: the log is not a well-formed observation log of format 2.")
    p.add_argument("mechanism", metavar="MECH")
    p.add_argument("log", metavar="LOG", help="an observation log ('# kstep-log 2 MECH ...' header, one line per "
                                               "step, '# kstep-log end steps=N' last; see kernel-lab/README.md); "
                                               "for damon, a damo record file (json_compressed or json) or the "
                                               "text of tracefs's trace file with damon_aggregated lines")
    p.add_argument("--html", metavar="FILE", help="damon: write the observed aggregations as an offline animation")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("litmus", help="which final states of a C litmus test each memory model allows",
                       allow_abbrev=False)
    p.add_argument("test", metavar="FILE", help="a C litmus test ('-': standard input), or the name of a bundled "
                                                "one (a mechanism's barrier; --list names them)", nargs="?")
    p.add_argument("--model", choices=("sc", "tso", "arm64", "power", "lkmm", "all"), default="lkmm")
    p.add_argument("--list", action="store_true", help="list the bundled litmus tests of the mechanisms")
    p.add_argument("--html", metavar="FILE", help="write one execution, stepped in the player, as a standalone "
                                                "offline page: tso runs the store buffers, the other models "
                                                "reveal an execution reaching the exists clause (or the cycle "
                                                "that forbids it)")
    p.add_argument("-s", "--seed", type=int, metavar="N", help="--html: the random scheduler's seed (default: for tso "
                                                              "the first seed that reaches the exists clause, else 1)")
    p.set_defaults(run=cmd_litmus)

    p = sub.add_parser("grade", help="grade a submission (or --batch many) in the sandbox", allow_abbrev=False,
                       description="Grade SUBMISSION (a folder, zip or file) for EXERCISE: public tests and the "
                                   "submission's code in a sandbox, hidden tests outside it.  Writes results.json "
                                   "(Gradescope), junit.xml and summary.txt to --out.  Exit 0: graded (whatever "
                                   "the score); 2: bad input, a changed release, or no working sandbox.")
    p.add_argument("exercise", nargs="?", metavar="EXERCISE", help="an exercise id or the path of its folder")
    p.add_argument("submission", nargs="?", metavar="SUBMISSION")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--student", metavar="ID", help="grade the variant of this student (needs --config)")
    who.add_argument("--metadata", metavar="FILE", help="Gradescope's submission_metadata.json names the student")
    p.add_argument("--batch", metavar="DIR", help="grade every student's entry of DIR (named by student id)")
    p.add_argument("--config", metavar="COURSE.toml", help="the course configuration (secret, exercises)")
    p.add_argument("--exercises", metavar="DIR", help="the folder of exercises (default: the config's, else ./exercises)")
    p.add_argument("--manifest", metavar="FILE", help="a release's manifest.json: refuse to grade if anything changed")
    p.add_argument("--out", metavar="DIR", help="where results go (an existing folder)")
    p.add_argument("--jobs", type=bounded(MAX_JOBS), default=1, metavar="N",
                   help=f"--batch: grade N submissions at a time (1..{MAX_JOBS})")
    p.add_argument("--sandbox", choices=sandbox_modes(), default="bwrap",
                   help="bwrap (default) or the weaker user mode (docs/instructor/gradescope.md)")
    p.add_argument("--kernel-lab", metavar="DIR", help="the kernel lab to build C submissions against "
                                                       "(default: kernel-lab beside the exercises)")
    p.add_argument("--check-sandbox", action="store_true", help="only check that the sandbox works here")
    p.intermixed = True
    p.set_defaults(run=cmd_grade)

    p = sub.add_parser("release", help="per-student bundles and Gradescope autograder zips", allow_abbrev=False,
                       description="Write one bundle per student of the roster (their variant, the starter, the "
                                   "public tests; no solution, no hidden test) and one Gradescope autograder zip "
                                   "per exercise, pinned by a manifest.")
    p.add_argument("--config", required=True, metavar="COURSE.toml")
    p.add_argument("--roster", required=True, metavar="CSV", help="a CSV file with a 'student' column")
    p.add_argument("--out", required=True, metavar="DIR", help="a new folder for the release")
    p.add_argument("--exercise", action="append", metavar="ID", help="release only these (repeatable; default: all)")
    p.set_defaults(run=cmd_release)

    lab_parser(sub)

    top.set_defaults(run=lambda args: top.error(
        "choose a command: list, run, explore, show, check, grade, release or lab"))
    return top


def lab_parser(sub) -> None:
    from .lab.guest import qemu as guest

    p = sub.add_parser("serve", help="serve a built course site on 127.0.0.1 (its pages' interactive mode needs it)",
                       allow_abbrev=False,
                       description="Serve DIR (a built site, e.g. build/course) over HTTP on 127.0.0.1 until "
                                   "Ctrl-C: its pages then let a student schedule the threads by hand, with the "
                                   "model running as Python in the browser (Pyodide cannot start from file://).")
    p.add_argument("directory", metavar="DIR", help="the folder to serve")
    p.add_argument("--port", type=port, default=8000, help="the port to listen on (0: any free one; default 8000)")
    p.set_defaults(run=cmd_serve)

    lab = sub.add_parser("lab", help="boot Debian's Linux 6.12 in QEMU and probe it beside the models",
                         allow_abbrev=False,
                         description="The real-kernel lab: Debian's own 6.12 kernels for x86_64, arm64 and "
                                     "ppc64le under qemu-system (TCG), probes in a generated initramfs.")
    cmds = lab.add_subparsers(title="lab commands", metavar="LABCMD", parser_class=Parser)
    p = cmds.add_parser("fetch", help="resolve one 6.12 version for all three architectures and cache it",
                        allow_abbrev=False)
    p.add_argument("--refresh", action="store_true", help="resolve again even if a version is cached")
    p.set_defaults(run=cmd_lab_fetch)
    p = cmds.add_parser("doctor", help="what this host lacks for the lab, and how to get it", allow_abbrev=False)
    p.set_defaults(run=cmd_lab_doctor)
    p = cmds.add_parser("run", help="boot one architecture (or all) and run probes", allow_abbrev=False,
                        description="Exit 0: every probe's checks hold; 1: a check failed or the guest "
                                    "crashed or hung; 2: bad input or a missing tool or kernel.")
    p.add_argument("--arch", required=True, metavar="ARCH", help=f"{', '.join(guest.MACHINES)} or all")
    p.add_argument("--smp", type=bounded(MAX_SMP), default=guest.SMP, metavar="N",
                   help=f"virtual CPUs (1..{MAX_SMP}; default {guest.SMP})")
    p.add_argument("--timeout", type=bounded(MAX_GUEST_SECONDS), default=guest.TIMEOUT_S, metavar="S",
                   help=f"kill a guest after S seconds (1..{MAX_GUEST_SECONDS}; default {guest.TIMEOUT_S})")
    p.add_argument("--out", metavar="DIR", help="write the result JSON here (default: the user cache)")
    p.add_argument("--cpu", metavar="MODEL",
                   help="QEMU -cpu model instead of the lab's, e.g. 'max' on x86_64: its hypervisor bit "
                        "makes Linux use virt_spin_lock()'s test-and-set lock instead of the qspinlock")
    p.add_argument("probes", nargs="*", metavar="PROBE",
                   help=f"{', '.join(guest.KNOWN)} (default: {', '.join(guest.PROBES)})")
    p.set_defaults(run=cmd_lab_run)
    p = cmds.add_parser("show", help="print (or --plot) one recorded result beside the model", allow_abbrev=False)
    p.add_argument("result", metavar="RESULT.json")
    p.add_argument("--plot", metavar="FILE.png", help="also draw the result's figures into FILE.png")
    p.set_defaults(run=cmd_lab_show)
    lab.set_defaults(run=lambda args: lab.error("choose a lab command: fetch, doctor, run or show"))


def mechanism_and_scenario(p: Parser) -> None:
    p.add_argument("mechanism", metavar="MECH")
    p.add_argument("--scenario", required=True, metavar="S",
                   help="a bundled scenario's name (kstep list MECH) or a path to a .toml file")
    p.add_argument("--variant", metavar="V", help="a variant of the mechanism (default: the kernel's own)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override one scenario value, e.g. threads.0.sections=3 (TOML value; repeatable)")


def memory_model_option(p: Parser) -> None:
    p.add_argument("--memory-model", choices=MEMORY_MODELS, default="sc",
                   help="sc (default): every store is seen at once; tso: x86's per-CPU store buffers, as deep as "
                        "the scenario's store_buffer")


def outputs(p: Parser, what: str) -> None:
    p.add_argument("--json", metavar="FILE", help=f"write {what} as a kstep trace (JSON)")
    p.add_argument("--html", metavar="FILE", help=f"write {what} as a standalone, offline HTML animation")


def decimal(text: str, lo: int, hi: int) -> int:
    """A whole number written in ASCII decimal digits, within lo..hi (``010`` is ten)."""
    shown = shorten(text, 40)
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{shown!r} is not a whole number (decimal digits 0-9)")
    # compare lengths first: int() of a 5000-digit string is an error of its own
    if len(text.lstrip("-0")) > len(str(hi)) or not lo <= int(text) <= hi:
        raise argparse.ArgumentTypeError(f"{shown} is out of range {lo}..{hi}")
    return int(text)


def bounded(hi: int):
    def parse(text: str) -> int:
        return decimal(text, 1, hi)

    return parse


def port(text: str) -> int:
    return decimal(text, 0, 65535)


def seed(text: str) -> int:
    return decimal(text, 0, MAX_SEED)


def epilog() -> str:
    lines = ["mechanisms and their scenarios (details: kstep list MECH):"]
    for name, cls in MODELS.items():
        lines.append(f"  {name:<12}{cls.title}")
        lines.append(f"  {'':<12}scenarios: {', '.join(scenarios.bundled(name)) or '(none)'}")
    name, cls = next(iter(MODELS.items()))
    example = (scenarios.bundled(name) or ["NAME"])[0]
    broken = next((v for v, var in cls.variants.items() if var.broken), None)
    lines += ["", "examples:",
              f"  kstep run {name} --scenario {example} -s 3       a problem: work out the ? columns",
              f"  kstep run {name} --scenario {example} -s 3 -c    the same run with its answers"]
    if broken:
        lines.append(f"  kstep explore {name} --scenario {example} --variant {broken}    find the bug")
    lines += ["", "exit status:", *exit_status_lines()]
    return "\n".join(lines)


# --- commands -----------------------------------------------------------------------------------------


def cmd_serve(args) -> int:
    from .serve import serve

    serve(args.directory, args.port, say=lambda line: print(line, flush=True))
    return OK


def cmd_list(args) -> int:
    if args.mechanism is None:
        if args.schema:
            raise UserError("--schema needs a mechanism: kstep list MECH --schema")
        print("Mechanisms (kstep list MECH for details):")
        for name, cls in MODELS.items():
            print(f"\n{name} — {cls.title}")
            print(f"  scenarios: {', '.join(scenarios.bundled(name)) or '(none)'}")
            for kind, names in by_kind(cls.variants).items():
                print(f"  {KIND_HEADINGS[kind] + ':':<17}{', '.join(variant_tag(cls, v) for v in names)}")
        return OK
    cls = model_class(args.mechanism)
    print(f"{cls.name} — {cls.title}")
    print(f"\nScenarios (kstep run {cls.name} --scenario NAME):")
    for name in scenarios.bundled(cls.name):
        sc = scenarios.load(cls.name, cls.scenario_schema, name)
        print(f"  {name}")
        print(wrap(sc.description, "      "))
    print("\nVariants (--variant NAME):")
    found = caught(cls.name)
    live = lively(cls.name)
    for kind, names in by_kind(cls.variants).items():
        print(f" {KIND_HEADINGS[kind]} (each {KINDS[kind]}):")
        for name in names:
            print_variant(cls, name, found, live)
    if args.schema:
        print("\nScenario file (TOML; a run can change one value with --set KEY.PATH=VALUE):")
        for line in scenarios.full_schema(cls.scenario_schema).describe("  "):
            print(line)
    return OK


def print_variant(cls, name: str, found: dict, live: dict) -> None:
    """One variant of ``kstep list MECH``: its tag, what it is, and for a bug where explore catches it."""
    variant = cls.variants[name]
    print(f"  {variant_tag(cls, name)}")
    print(wrap(variant.doc, "      "))
    if variant.unfixed:
        print(wrap(f"no fix named: {variant.unfixed}", "      "))
    if variant.broken:
        shown = [f"{'deadlocks' if inv == 'deadlock' else 'breaks ' + inv}: explore catches it on "
                 f"{', '.join(sorted(names))}" for inv, names in sorted(found.get(name, {}).items())]
        if not shown:  # a bug only a run that never ends shows breaks no invariant on the way
            lasso = set(live.get(name, {})) - {"free"}
            shown = ["explore catches it on no bundled scenario"
                     + (": it breaks no invariant there, and explore --liveness shows its lasso" if lasso else
                        f" under sc or tso (x86 keeps its stores in order); kstep litmus "
                        f"{variant.params['litmus']} shows it on weaker models" if "litmus" in variant.params
                        else "")]
        print(wrap("; ".join(shown), "      ", hyphens=False))
    if name in live:
        print(wrap("explore --liveness: " + "; ".join(f"{verdict} on {', '.join(sorted(names))}"
                                                      for verdict, names in sorted(live[name].items())),
                   "      ", hyphens=False))


def cmd_run(args) -> int:
    ex = experiment(args).under(args.memory_model)
    model, sc = ex.model, ex.scenario
    check_outputs(args.json, args.html, scenario_inputs(args))
    scheduler, how = pick_scheduler(args, sc, model)
    if how.startswith("the scenario's own") and not args.steps:
        trace = ex.run()  # its own run: a declared lasso is judged on it
        if trace.cycle_start is not None:
            how = f"the scenario's own lasso, {sc.schedule!r}: steps {trace.cycle_start + 1}..{len(trace)} repeat forever"
        elif sc.forever:
            how += f", for the {sc.steps} steps it declares (its runs never end)"
    else:
        trace = ex.run(scheduler, max_steps=args.steps)
    # Asked and not revealed, a scenario's text (it tells the outcome) and what the steps from the
    # first one asked about did would answer its questions: only who ran is shown there.
    shown = None if args.compute else questions.steps_shown(questions.answers(model, sc.questions, trace))
    print(f"{model.name} ({model.title}), variant {model.variant.name}")
    if shown is None:
        print(f"scenario {clean(sc.name)}:")
        print(wrap(sc.description, "  "))
        print(f"look for:\n{wrap(sc.look_for, '  ')}")
    else:
        print(f"scenario {clean(sc.name)}: its description tells the outcome, so -c shows it with the answers")
    if args.memory_model != "sc":
        print(f"memory model: {args.memory_model}, store buffers of {sc.store_buffer} entries per CPU (the "
              f"scenario's store_buffer)")
    print(f"scheduler: {clean(how)}\n")
    print_table(model, trace, reveal=args.compute, labels=shown)
    print()
    if trace.scheduler == Timed.name:  # who ran is in the table already; this is it as -P takes it
        print(wrap(f"its schedule, for -P or a C port (qspinlock-torture --schedule): "
                   f"{schedule_text(a.actor for a in trace.actions)}", "") + "\n")
    if shown is not None and shown < len(trace):
        print(f"Steps {shown + 1}..{len(trace)} show only who ran: what they did is for you to predict.\n")
    if sc.questions:
        print_questions(model, sc, trace, reveal=args.compute)
    if args.compute:
        print_answers(model, trace)
        if how.startswith("the scenario's own") and sc.expect:
            print_claims(model, sc, trace)
    else:
        print("Work out the ? columns and how the run ends, then rerun with -c for the answers "
              "(ungraded practice: it prints them).")
    write_outputs(model, trace, args.json, args.html, about=sc)
    return OK if trace.violation is None else VIOLATION


def cmd_explore(args) -> int:
    if args.liveness:
        return explore_liveness(args)
    ex = experiment(args)
    model, sc = ex.model, ex.scenario
    written = [p for p in (args.states, args.dot) if p is not None]
    check_outputs(args.json, args.html, scenario_inputs(args))
    for flag, path in (("--states", args.states), ("--dot", args.dot)):
        if path is not None:
            check_output(path, flag, scenario_inputs(args) + [p for p in written if p != path])
    if args.columns is not None and args.states is None:
        raise UserError("--columns: only with --states")
    ex = ex.under(args.memory_model)
    model, state = ex.model, ex.start
    if args.columns is not None:
        unknown = [c for c in args.columns if c not in recorded(model).describe(state)]
        if unknown:
            raise UserError(f"--columns: no field {shorten(unknown[0], 40)!r} (fields: "
                            f"{', '.join(recorded(model).describe(state))})")
    if args.dot is not None:
        graph = state_graph(model, state, DOT_LIMIT)
        if graph is None:
            raise UserError(f"--dot: scenario {clean(sc.name)} has more than {DOT_LIMIT:,} reachable states; "
                            f"--dot draws up to {DOT_LIMIT:,}")
        write_text(args.dot, dot(model, *graph, present(model).summary))
    checks = [inv.name for inv in model.invariants] + ["deadlock"]
    print(f"exploring {model.name} variant {model.variant.name}, scenario {clean(sc.name)}, memory model "
          + ("sc" if args.memory_model == "sc" else f"{args.memory_model}, store buffers of {sc.store_buffer} "
                                                     f"entries per CPU (the scenario's store_buffer)"))
    print(f"checks: {', '.join(checks)}")
    if fixed_choices(model):
        print(f"fixed, not branched on: {fixed_choices(model)}")
    # the rows go to a temporary file that replaces --states only once the search is over
    with replacing(args.states) if args.states is not None else nullcontext() as write:
        visit = None
        if write is not None:
            def visit(s):
                row = recorded(model).describe(s)
                if args.columns is not None:
                    row = {c: row[c] for c in args.columns}
                write(json.dumps(row, separators=(",", ":")) + "\n")
        result = ex.explore(max_states=args.max_states, progress=progress_reporter(), symmetry=args.symmetry,
                            por=args.por, fingerprints=args.hash_compact, visit=visit, dead_vars=args.dead_vars)
    declared = reductions.of(model)
    units = [c for c in declared.symmetric_units(state) if len(c) > 1] if args.symmetry else []
    how = ([f"one per symmetry orbit; interchangeable units: {'; '.join(' '.join(map(str, c)) for c in units)}"]
           if units else []) + ([f"dead locals forgotten: {', '.join(declared.locals)}"]
                                if args.dead_vars and declared.locals else [])
    print(f"states: {result.states}" + (f" ({'; '.join(how)})" if how else ""))
    if result.searches == 2:
        print("  (the states of two searches: the first, reduced or hash-compacted, found the violation; the "
              "second, exact and no deeper, the shortest counterexample)")
    if result.reduced:
        print(f"partial-order reduction: {result.reduced} states expanded through an ample set")
    print(f"transitions: {result.transitions}")
    print(f"depth: {result.depth}")
    print(f"seconds: {result.seconds:.2f}")
    if result.violation is not None:
        v = result.violation
        what = "DEADLOCK" if v.invariant == "deadlock" else f"VIOLATED ({'harm' if result.harm else 'broken assertion'}) {v.invariant}"
        print(f"verdict: {what}: {clean(v.message)}")
        if not result.harm:
            print("no harm invariant is violated in any reachable state (the search was exhausted)"
                  if result.exhausted else
                  "no harm invariant was violated before the search stopped")
        cex = result.counterexample
        assert cex is not None  # a violation always comes with its counterexample
        print(f"\nshortest counterexample{'' if result.harm else ' to the broken assertion'} ({len(cex)} steps):")
        print_table(model, cex, reveal=True)
        print()
        write_outputs(model, cex, args.json, args.html, about=sc)
        return INTERRUPTED if result.interrupted else VIOLATION
    weaker = model.variant.params.get("litmus")
    if result.exhausted and result.violation is None and weaker:
        print(weaker_only(weaker, args.memory_model))
    elif result.exhausted and model.variant.broken:
        shows = sorted(s for names in caught(model.name).get(model.variant.name, {}).values() for s in names)
        live = sorted(lively(model.name).get(model.variant.name, {}).get(LIVELOCK, []))
        print(f"(clean for this scenario: it cannot show {model.variant.name}'s bug" +
              (f"; scenario {shows[0]} does)" if shows else
               f"; explore --liveness on scenario {live[0]} does: a livelock)" if live else ")"))
    if result.interrupted:
        print(f"verdict: INTERRUPTED: stopped by Ctrl-C at depth {result.depth}, NOT clean (no violation among "
              f"the {result.states:,} states it stored)")
        skipped(args)
        return INTERRUPTED
    if args.hash_compact and result.states < args.max_states:
        n = result.states
        print(f"verdict: NOT proven clean: no violation among {n:,} fingerprints, omission probability "
              f"<= {n * (n - 1) / 2 ** 65:.2g} (--hash-compact: two states with one 64-bit hash count as one)")
        skipped(args)
        return BOUNDED
    if not result.exhausted:
        print(f"verdict: NOT clean: the search stored --max-states {args.max_states} states and then met one "
              f"it had not stored (no violation among the states it saw)")
        skipped(args)
        return BOUNDED
    print("verdict: clean: every reachable state explored"
          + (" for those fixed choices" if fixed_choices(model) else "")
          + "; every invariant holds and nothing deadlocks")
    skipped(args)
    return OK


def weaker_only(name: str, checked: str) -> str:
    """What explore says of a variant whose bug only a weaker memory model than ``checked`` shows: the
    bundled litmus test of its ordering, run now under every model."""
    from .memory import bundled  # the litmus models load only for the variants that need them
    verdicts = bundled.verdicts(name)
    allowed = [m for m, r in verdicts.items() if r != "Never"]
    return wrap(f"(clean under {checked}: its missing barrier orders nothing that {checked} does not keep in "
                f"order; the litmus test {name} shows the reordering it allows: "
                + ", ".join(f"{m} {r}" for m, r in verdicts.items())
                + f" -- the weak outcome is {'allowed on ' + ', '.join(allowed) if allowed else 'allowed nowhere'}; "
                  f"kstep litmus {name}.  The whole model runs under sc and tso only: arm64, power and the "
                  f"LKMM are checked on the litmus test of the ordering, not on the mechanism model.)", "")


def explore_liveness(args) -> int:
    """explore --liveness: every actor's starvation, a livelock or a deadlock, each as a lasso trace."""
    given = [flag for flag, on in (("--states", args.states), ("--dot", args.dot), ("--no-symmetry", not args.symmetry),
                                   ("--no-por", not args.por), ("--no-dead-vars", not args.dead_vars),
                                   ("--hash-compact", args.hash_compact)) if on]
    if given:
        raise UserError(f"{given[0]}: not with --liveness (it stores every state, with no reduction)")
    ex = experiment(args)
    model, sc = ex.model, ex.scenario
    check_outputs(args.json, args.html, scenario_inputs(args))
    print(f"exploring {model.name} variant {model.variant.name}, scenario {clean(sc.name)}, for liveness")
    declared = progress.of(model)
    print(f"progress: {', '.join(sorted(declared.progress_labels))}; fairness: weak, per actor (an actor that can "
          f"always move does move)")
    result = ex.liveness(max_states=args.max_states, progress=progress_reporter())
    note = f" ({declared.lasso_note(ex.start)})" if declared.lasso_note(ex.start) else ""
    print(f"states: {result.states} (no reduction)")
    print(f"transitions: {result.transitions}")
    print(f"seconds: {result.seconds:.2f}")
    shown = result.livelock or result.deadlock or next(iter(result.lassos.values()), None)
    if result.deadlock is not None:
        assert result.deadlock.violation is not None  # a deadlock's run ends in its violation
        print(f"verdict: DEADLOCK after {len(result.deadlock)} steps: {clean(result.deadlock.violation.message)}")
    if result.livelock is not None:
        assert result.livelock.lasso is not None  # a livelock is a lasso
        print(f"verdict: LIVELOCK: {describe(result.livelock.lasso)}{note}")
    for actor in result.actors:
        if actor in result.lassos:
            print(f"verdict: STARVATION: {describe(result.lassos[actor].lasso)}{note}")
        elif result.livelock is None and result.deadlock is None and result.exhausted:
            print(f"verdict: {actor} starvation-free: in every fair cycle it enters "
                  f"{' or '.join(sorted(declared.progress_labels))}")
    if shown is not None:
        print(f"\n{'the run' if shown is result.deadlock else 'the lasso'} ({len(shown)} steps"
              + ("" if shown.cycle_start is None else f"; steps {shown.cycle_start + 1}..{len(shown)} repeat forever")
              + "):")
        print_table(model, shown, reveal=True)
        print()
        write_outputs(model, shown, args.json, args.html, about=sc)
        return VIOLATION
    if not result.exhausted:
        why = "Ctrl-C" if result.interrupted else f"--max-states {args.max_states}"
        print(f"verdict: NOT proven free of starvation: stopped by {why} before the graph was complete")
        skipped(args)
        return INTERRUPTED if result.interrupted else BOUNDED
    if not result.cyclic:
        print("(every run of this scenario ends: give its CPUs repeat = \"forever\" for runs that can starve)")
    print("verdict: free of starvation, livelock and deadlock under weak fairness")
    skipped(args)
    return OK


def cmd_show(args) -> int:
    check_outputs(None, args.html, [args.trace])
    trace, model = replay.load(args.trace, steps_model_for(args.steps)) if args.steps else load_trace(args.trace)
    print(f"{model.name} ({model.title}), variant {model.variant.name}")
    print(f"scenario {clean(trace.scenario) or '(unnamed)'}, scheduler: {scheduler_text(trace)}")
    print("(run again from its scheduler: every step, tick and state, the stats, the outcome and the "
          "violation are the file's)\n")
    print_table(model, trace, reveal=True)
    print()
    print_answers(model, trace)
    if trace.cycle_start is not None:
        assert trace.lasso is not None  # a trace with a cycle records its lasso
        print(f"  lasso: {describe(trace.lasso)}; steps {trace.cycle_start + 1}..{len(trace)} repeat forever "
              f"(judged again on this run: the cycle closes, is fair, and shows it)")
        if progress.of(model).lasso_note(trace.states[0]):
            print(f"  ({progress.of(model).lasso_note(trace.states[0])})")
    write_outputs(model, trace, None, args.html)
    return OK if trace.violation is None else VIOLATION


def cmd_check(args) -> int:
    if args.mechanism == "damon":
        return check_observed_damon(args)
    if args.html is not None:
        raise UserError("--html: only a damon observation is drawn (a log replay has no trace to draw)")
    if args.mechanism == "vma-locks":
        return cmd_check_vma_locks(args)
    from .lab.replay import check_file  # the log checker is only loaded by the command that uses it

    result = check_file(args.mechanism, args.log, progress=report_check_progress)
    h = result.header
    extra = "".join(f", {k} {h[k]}" for k in ("irq", "steal_spins", "head_spins") if k in h)
    print(f"checking {clean(args.log)} against {result.mechanism} variant {result.variant} "
          f"({h['cpus']} CPUs, {h['acquisitions']} acquisitions each, pending_bits {h['pending_bits']}{extra})")
    if not result.ok:
        print(f"line {result.line}: {clean(result.text)}")
        print(f"verdict: {result.verdict}: {clean(result.why)}")
        print(f"(the {plural(result.steps, 'step')} and {plural(result.acquisitions, 'acquisition')} "
              f"before it were legal)")
        return VIOLATION
    print(f"steps: {result.steps}")
    print(f"acquisitions: {result.acquisitions}")
    print(f"seconds: {result.seconds:.2f}")
    print("verdict: every logged step is one the model allows, and the run finished")
    return OK


def check_observed_damon(args) -> int:
    """A real kernel's DAMON results, held to the region invariants and drawn, never re-simulated."""
    from .lab.replay import damon_observed as observed

    check_outputs(None, args.html, [args.log])
    obs = observed.read(args.log)
    trace, model = observed.observed_trace(obs, Path(args.log).name)
    print(f"checking {clean(args.log)} ({obs.kind}, target {obs.target}"
          f"{f' of {obs.targets}' if obs.targets > 1 else ''}) against the region invariants of damon")
    for note in obs.notes:
        print(f"note: {clean(note)}")
    counts = [len(s.regions) for s in trace.states[1:]]
    print(f"aggregations: {len(obs.snapshots)}")
    print(f"nr_regions min..max: {min(counts)}..{max(counts)}")
    checked = [n for n in observed.CHECKED if obs.attrs or n != "nr-accesses-within-samples"]
    print(f"checked: {', '.join(checked)}")
    if not obs.attrs:
        print("not checked: nr-accesses-within-samples (the tracepoint text does not give the intervals)")
    write_outputs(model, trace, None, args.html)
    if trace.violation is not None:
        v = trace.violation
        print(f"verdict: aggregation {v.step} breaks {v.title}: {clean(v.message)}")
        return VIOLATION
    print("verdict: every observed aggregation keeps the region invariants")
    return OK


def scheduler_text(trace) -> str:
    how = {"random": f"random, seed {trace.seed}", "round-robin": "round-robin",
           "scripted": f"scripted {trace.script!r}, then round-robin",
           "explore": f"explore's counterexample, its {plural(len(trace), 'action')} exactly",
           "timed": f"timed, costs from {trace.stats.get('cost_table', '?')}"}[trace.scheduler]
    return clean(f"{how}, at most {trace.max_steps:,} steps")


def cmd_check_vma_locks(args) -> int:
    from .lab.replay import check_file

    result = check_file(args.mechanism, args.log, progress=report_check_progress)
    print(f"checking {clean(args.log)} against vma-locks variant {result.variant} "
          f"({plural(result.threads, 'thread')}, seed {result.header.get('seed', '-')})")
    if not result.ok:
        print(f"line {result.line}: {clean(result.text)}")
        print(f"verdict: {result.verdict}: {clean(result.why)}")
        print(f"(the {plural(result.steps, 'step')} before it were legal)")
        return VIOLATION
    print(f"steps: {result.steps}")
    print("counters: " + ", ".join(f"{k} {v}" for k, v in result.counters.items()))
    print(f"seconds: {result.seconds:.2f}")
    print("verdict: every logged step is one the model allows, and the run finished")
    return OK


def lab_log(line: str) -> None:
    print(f"lab: {clean(line)}", file=sys.stderr, flush=True)


def cmd_lab_fetch(args) -> int:
    from .source import debian
    from .lab.guest import kernels

    try:
        k = kernels.fetch(refresh=args.refresh, log=lab_log)
    except debian.DebianFetchError as e:
        raise UserError(f"lab fetch: {e}") from None
    print(f"kernels {k.abi} in {k.root}")
    for a in kernels.ARCHES:
        print(f"  {a:<8} {k.release(a)} ({k.package_version(a)}, {k.manifest['suites'][a]})")
    return OK


def cmd_lab_doctor(args) -> int:
    from .lab.guest import doctor

    missing = 0
    for item in doctor.diagnose():
        print(f"{'ok' if item.ok else 'MISSING':<8} {item.what}" + ("" if item.ok else f": {item.fix}"))
        missing += not item.ok
    print("everything the lab needs is here" if not missing else f"{plural(missing, 'thing')} missing")
    return OK if not missing else VIOLATION


def lab_kernels():
    from .lab.guest import kernels

    k = kernels.load()
    if k is None:
        raise UserError("no kernels fetched: run 'kstep lab fetch' (about 300 MB, once)")
    return k


def cmd_lab_run(args) -> int:
    from .lab.guest import qemu as guest, probes

    arches = list(guest.MACHINES) if args.arch == "all" else [args.arch]
    chosen = args.probes or list(guest.PROBES)
    for a in arches:
        guest.check_request(a, chosen)
    out = Path(args.out) if args.out else None
    if out is not None and not out.is_dir():
        raise UserError(f"--out {args.out}: not an existing folder")
    k = lab_kernels()
    status = OK
    for a in arches:
        try:
            result = guest.run(a, k, chosen, smp=args.smp, timeout=args.timeout, say=lab_log, cpu=args.cpu)
        except guest.LabError as e:
            print(f"{a}: FAILED: {clean(str(e))}")
            for line in e.excerpt.splitlines():
                print(f"  | {clean(line)}")
            status = VIOLATION
            continue
        result["models"] = probes.model_variants(k)
        path = guest.save(result, out)
        print(f"{a}: result {path}")
        if not print_lab_result(result):
            status = VIOLATION
    return status


def cmd_lab_show(args) -> int:
    from .lab.guest import probes, qemu as guest

    result = guest.load_result(Path(args.result))
    if args.plot is not None:
        if not args.plot.lower().endswith(".png"):
            raise UserError(f"--plot {args.plot}: the figure is a PNG image; name a FILE.png")
        check_output(args.plot, "--plot", [args.result])
    print(f"{result['arch']}: {result['kernel']['release']} ({result['kernel']['package_version']}), "
          f"smp {result['smp']}, {result['date']}, boot {result['boot_seconds']} s")
    print(clean(probes.release_gap(result)))
    ok = print_lab_result(result)
    if args.plot is not None:
        from .lab.guest import plots

        with replacing(args.plot) as write:
            write(plots.png(result))
        print(f"wrote figure {clean(args.plot)}")
    return OK if ok else VIOLATION


def print_lab_result(result: dict) -> bool:
    """The kernel's numbers beside the model's, then each check; True if every check that is not
    about measured times holds."""
    from .lab.guest import probes

    lines, ok = probes.report(result)
    for line in lines:
        print(clean(line))
    return ok


def sandbox_modes() -> tuple:
    from .grading.sandbox import MODES

    return MODES


def cmd_litmus(args) -> int:
    from .files import read_text
    from .memory import arm64, bundled, lkmm, power, sc, tso
    from .memory.hardware import lkmm_only_use
    from .memory.litmus import parse
    from .memory.verdict import check

    if args.list:
        print("\n".join(bundled.names()))
        return 0
    if args.test is None:
        raise UserError("litmus needs a FILE, a bundled test's name or --list")
    if args.html is not None and args.model == "all":
        raise UserError("--html draws one model's execution: name it with --model sc|tso|arm64|power|lkmm")
    if args.seed is not None and args.html is None:
        raise UserError("--seed chooses the run --html draws: give --html too")
    if args.seed is not None and not 0 <= args.seed < 1 << 64:
        raise UserError(f"--seed {args.seed}: a seed is between 0 and 2**64 - 1")
    source = args.test
    if source != "-" and not Path(source).exists() and source in bundled.names():
        source = bundled.path(source)
    check_outputs(None, args.html, [str(source)])
    test = parse(read_text(source, 1 << 20, "litmus test"), clean(args.test))
    models = (sc, tso, arm64, power, lkmm) if args.model == "all" else \
        ({"sc": sc, "tso": tso, "arm64": arm64, "power": power, "lkmm": lkmm}[args.model],)
    # With --model all, a lock or RCU test leaves the hardware models out (n/a) instead of failing:
    # a named hardware model still refuses it with the primitive's line.
    lkmm_only = lkmm_only_use(test) if args.model == "all" else None
    verdicts = [None if lkmm_only is not None and model is not lkmm else check(test, model) for model in models]
    if args.model == "all":
        # A value is a number or a location's name (a pointer): numbers first, so no int meets a str.
        outcomes = sorted({state for v in verdicts if v is not None for state in v.states},
                          key=lambda state: [(k, isinstance(val, str), val) for k, val in state])
        print("outcome".ljust(40) + "".join(m.NAME.ljust(10) for m in models))
        for state in outcomes:
            cells = ("n/a" if v is None else "allowed" if state in v.states else "forbidden" for v in verdicts)
            print(" ".join(f"{k}={val}" for k, val in state).ljust(40) + "".join(c.ljust(10) for c in cells))
        print()
        if lkmm_only is not None:
            print(f"n/a: line {lkmm_only.line}: {lkmm_only.primitive}() is LKMM-only; the hardware models "
                  "take ONCE accesses, acquire/release, fences and atomics, not locks or RCU\n")
    for model, v in zip(models, verdicts):
        if v is None:
            continue
        expected = f" (header Result: {test.expected})" if model is lkmm and test.expected else ""
        flags = f" flags: {', '.join(sorted(v.flags))}" if v.flags else ""
        print(f"{model.NAME}: {v.result}{expected}{flags}")
        for state, witness in v.states.items():
            print(f"  {litmus_state(state)}")
            for line in litmus_witness(witness):
                print(f"    {line}")
    if args.html is not None:
        from .source.excerpts import load
        from .memory.stepping import stepped
        from .views import save_html

        machine, trace = stepped(test, args.model, load()["excerpts"], args.seed)
        save_html(trace, machine, args.html)
        print(f"wrote {len(trace.actions)} steps (seed {trace.seed}) to {clean(args.html)}")
    return 0


def litmus_state(state) -> str:
    """A final state as the litmus format writes it: ``0:r0=0 1:r0=1 x=2``."""
    return " ".join(f"{k}={val}" for k, val in state)


def litmus_witness(witness) -> list[str]:
    """One execution that reaches a state: each thread's events in program order, then its rf, co and
    fr edges between them (rf: which write each read reads; co: the order of writes to a location;
    fr: a read before a write that overwrites what it read)."""
    from .memory.stepping import event_names

    names = event_names(witness.events)
    threads = sorted({e.thread for e in witness.events if e.thread >= 0})
    lines = [f"P{t}: " + "; ".join(f"{names[e.id]} {e.label()}" for e in witness.events if e.thread == t)
             for t in threads]
    edges = "   ".join(f"{rel}: " + (", ".join(f"{names[a]}->{names[b]}" for a, b in pairs) or "-")
                       for rel, pairs in (("rf", witness.rf), ("co", witness.co), ("fr", witness.fr)))
    return lines + [edges]


def cmd_grade(args) -> int:
    from .grading import batch, course as courses, exercise as exercises, harness, report, sandbox, variants

    try:
        sandbox.check(args.sandbox)
    except sandbox.SandboxUnavailable as e:
        raise UserError(f"no working sandbox, so no grading: {e}") from None
    if args.check_sandbox:
        print(f"sandbox: {args.sandbox} works here")
        return OK
    if args.exercise is None or (args.submission is None) == (args.batch is None):
        raise UserError("grade needs EXERCISE and either SUBMISSION or --batch DIR")
    course = courses.load(args.config) if args.config else None
    folder = Path(args.exercises) if args.exercises else course.exercises if course else Path("exercises")
    ex = exercises.find(args.exercise, folder)
    if args.manifest:
        courses.check_manifest(args.manifest, ex)
    lab = Path(args.kernel_lab) if args.kernel_lab else folder.resolve().parent / "kernel-lab"
    read_only = (lab,) if ex.kernel_lab else ()
    if ex.kernel_lab and not lab.is_dir():
        raise UserError(f"{ex.id} builds against the kernel lab, and {lab} is not a folder (--kernel-lab)")
    if ex.kernel_lab and not all((lab / "build" / a / "obj" / "torture").is_dir() for a in ("x86_64", "arm64", "ppc64le")):
        raise UserError(f"{ex.id} builds against the kernel lab's objects: build them first (make -C {lab})")
    secret = course.secret if course else ""
    out = Path(args.out) if args.out else None
    if out is not None and not out.is_dir():
        raise UserError(f"--out {out}: not an existing folder")
    if args.batch:
        if out is None:
            raise UserError("--batch needs --out DIR")
        graded, skipped = batch.grade_batch(ex, Path(args.batch), out, secret=secret, mode=args.sandbox,
                                            jobs=args.jobs, read_only=read_only, progress=batch.say)
        print(f"graded {graded}, already graded before {skipped}; results in {out}")
        return OK
    student = args.student or variants.EXAMPLE
    if args.metadata:
        student = gradescope_student(Path(args.metadata), course.id_field if course else "email")
    submission = Path(args.submission)
    if not submission.exists() and not submission.is_symlink():
        raise UserError(f"{submission}: no such file or folder")
    g = harness.grade(ex, submission, student=student, secret=secret, mode=args.sandbox, read_only=read_only)
    if out is not None:
        report.write(g, out)
    print(report.summary(g), end="")
    if ex.practice:
        print(f"{ex.id} is practice, not for a grade: {ex.practice}")
    return OK


def gradescope_student(path: Path, field: str) -> str:
    """The submitter's id in Gradescope's submission_metadata.json (its first user's ``field``)."""
    import json

    text = read_text(path, SMALL_CAP, "submission metadata file")
    try:
        users = json.loads(text)["users"]
        value = users[0][field]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):  # ValueError: JSON's, or a huge number's
        raise UserError(f"{path}: no users[0].{field} in this submission metadata") from None
    if not isinstance(value, str) or not value:
        raise UserError(f"{path}: users[0].{field} is not a student id")
    return value


def cmd_release(args) -> int:
    from .grading import course as courses, exercise as exercises, release

    course = courses.load(args.config)
    if not course.exercises.is_dir():
        raise UserError(f"{args.config}: exercises folder {course.exercises} does not exist")
    ids = args.exercise or sorted(d.name for d in course.exercises.iterdir() if (d / "exercise.toml").is_file())
    chosen = [exercises.find(i, course.exercises) for i in ids]
    roster = release.read_roster(Path(args.roster))
    pinned = release.release(course, chosen, roster, Path(args.out))
    print(f"released {', '.join(pinned['exercises'])} to {len(roster)} students in {args.out}")
    print("  students/<id>/<exercise>/   one bundle per student (no solutions, no hidden tests)")
    print("  gradescope/<exercise>.zip   autograders (they hold the course secret: upload, do not share)")
    for e in chosen:
        if e.practice:
            print(f"  {e.id}: practice only, no autograder ({e.practice})")
    return OK


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def report_check_progress(lines: int) -> None:
    print(f"check: {lines:,} steps ...", file=sys.stderr, flush=True)


# --- helpers the commands share --------------------------------------------------------------------------


KIND_HEADINGS = {RELEASE: "releases", IMPLEMENTATION: "implementations", BUG: "bugs"}


def variant_tag(cls, name: str) -> str:
    """``v6.12 (default; 6.12.117)``, ``tas``, ``count-after-init (broken; fixed in 11dc13224c97)``."""
    variant = cls.variants[name]
    notes = ["default"] if name == cls.default_variant else []
    if variant.broken:
        notes += ["broken"] + ([f"fixed in {variant.when}"] if variant.when else [])
    elif variant.when:
        notes.append(variant.when)
    return f"{name} ({'; '.join(notes)})" if notes else name


def experiment(args) -> Experiment:
    """MECH --scenario S [--variant V] [--set K=V...], with the scenario's questions checked."""
    ex = kstep_open(args.mechanism, args.scenario, args.variant, args.overrides)
    # Questions are written for the scenario's own variant: under another one, a question whose step
    # that variant lacks is one this run never gets to, not a mistake in the file.
    questions.validate(ex.variant(ex.scenario.variant or None).model, ex.scenario.questions)
    return ex


def pick_scheduler(args, sc, model):
    """-P, --round-robin, -s; else the scenario's own schedule; else random from seed 1.

    Returns the scheduler and a line that says how to get the same run again.
    """
    if args.schedule is not None:
        try:
            return Scripted(args.schedule), f"scripted -P {args.schedule!r}, then round-robin"
        except UserError as e:
            raise UserError(f"-P: {e}") from None
    if args.costs is not None and not args.timed:
        raise UserError("--costs: only a --timed run uses a cost table")
    if args.timed:
        table = costs.load(args.costs)
        return Timed(table), f"timed, the earliest clock first, costs from {table.source}"
    if args.round_robin:
        return RoundRobin(), "round-robin"
    if args.seed is None and sc.schedule:
        schedule, note = own_schedule(model, sc)
        try:
            return Scripted(schedule), note or f"the scenario's own, {sc.schedule!r}, then round-robin"
        except UserError as e:
            raise UserError(f"scenario {sc.name}: {e}") from None
    seed_used = 1 if args.seed is None else args.seed
    return Random(seed_used), f"random, seed {seed_used} (-s to change, -P to script, --round-robin)"


def load_trace(path: str):
    return replay.load(path, make_model)


def steps_model_for(path: str):
    """make_model for a trace of a student's steps: a variant ``BASE+steps`` is BASE with the step
    functions of the student's file ``path`` (imported from its own folder, as its driver does)."""
    import importlib.util

    from .grading.feedback import STUDENT, step_names, with_steps

    def model_for(mechanism: str, variant: str):
        if not variant.endswith(STUDENT):
            return make_model(mechanism, variant)
        base, cls = variant[:-len(STUDENT)], model_class(mechanism)
        make_model(mechanism, base)  # an unknown base is the user's mistake, in one line
        where = Path(path).resolve()
        spec = importlib.util.spec_from_file_location(where.stem, where)
        if spec is None or spec.loader is None or not where.is_file():
            raise UserError(f"--steps {path}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(where.parent))
        try:
            spec.loader.exec_module(module)  # the user's own code, which they asked to run
        except Exception as e:
            raise UserError(f"--steps {path}: importing it failed: {type(e).__name__}: {shorten(str(e))}") from None
        return with_steps(cls, base, step_names(cls, module))

    return model_for


def scenario_inputs(args) -> list[str]:
    """The user's scenario file, which no output may replace."""
    given = args.scenario
    return [given] if given == STDIN or given.endswith(".toml") or "/" in given else []


def check_outputs(json_path: Optional[str], html_path: Optional[str], inputs: Sequence[str]) -> None:
    """Refuse unwritable output paths, and outputs that would replace an input, before any work."""
    if json_path is not None and html_path is not None and same_file(json_path, html_path):
        raise UserError(f"--json and --html both name {json_path}")
    for flag, path in (("--json", json_path), ("--html", html_path)):
        if path is not None:
            check_output(path, flag, inputs)


def write_outputs(model, trace, json_path: Optional[str], html_path: Optional[str], about=None) -> None:
    """Write the trace and the animation; ``about`` is the scenario whose purpose the page states."""
    if json_path is not None:
        trace.write(model, json_path)
        print(f"wrote trace {clean(json_path)}")
    if html_path is not None:
        from .views import save_html  # Bokeh is heavy: only the command that draws loads it

        save_html(trace, model, html_path, about=about)
        print(f"wrote animation {clean(html_path)}")


def skipped(args) -> None:
    for path in (args.json, args.html):
        if path is not None:
            print(f"no counterexample: {clean(path)} not written")


def progress_reporter():
    """A progress callback for explore: states stored, frontier, rate since the start and peak memory."""
    start = time.perf_counter()

    def report(states: int, transitions: int, depth: int, frontier: int) -> None:
        rate = states / max(time.perf_counter() - start, 1e-9)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
        print(f"explore: {states:,} states, frontier {frontier:,}, depth {depth}, {rate:,.0f} states/s, "
              f"{transitions:,} transitions, peak {peak:,.0f} MiB ...", file=sys.stderr, flush=True)

    return report


# --- formatting -----------------------------------------------------------------------------------------


def print_table(model, trace, *, reveal: bool, labels: Optional[int] = None) -> None:
    """The OSTEP step table: the initial state is given, later states are '?' unless revealed; steps
    past the first ``labels`` (None: every step) show who ran but not what they did ('?')."""
    sources = model.sources()
    summary = present(model).summary
    summaries = [summary(s) for s in trace.states]
    columns: list[str] = []
    for row in summaries:
        columns += [c for c in row if c not in columns]
    head = ["step", "tick", "actor", "label", "kernel function"] + columns
    rows = [["0", "", "", "(initial)", ""] + [str(summaries[0].get(c, "")) for c in columns]]
    for k, (action, tick) in enumerate(zip(trace.actions, trace.ticks), start=1):
        state_cells = [str(summaries[k].get(c, "")) if reveal else "?" for c in columns]
        what = [action.label, str(sources[action.label])] if labels is None or k <= labels else ["?", "?"]
        rows.append([str(k), str(tick), action.actor] + what + state_cells)
    rows = [[clean(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    right = {0, 1}  # numbers
    for r in [head] + rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        print("  ".join(cells).rstrip())


def print_answers(model, trace) -> None:
    print("Answers:")
    timed = trace.stats if trace.scheduler == Timed.name else {}
    for key, value in present(model).answers(trace).items():
        if key not in timed:  # a timed run's stats follow, whether the model's answers hold them or not
            print(f"  {clean(str(key))}: {clean(plain(value))}")
    for key, value in timed.items():
        if key != STEP_COSTS:  # one triple per step: the player's columns, not an answer
            print(f"  {clean(str(key))}: {clean(plain(value))}")
    print(f"  steps: {len(trace)}")
    if trace.violation is not None:
        v = trace.violation
        print(f"  outcome: {v.title} at step {v.step}: {clean(v.message)}")
    else:
        print(f"  outcome: {trace.outcome}")


def print_questions(model, sc, trace, *, reveal: bool) -> None:
    """The scenario's questions about this run: '?' to predict, or (revealed) the answer and its step."""
    print("Questions:")
    for a in questions.answers(model, sc.questions, trace):
        q = a.question
        print(wrap(f"[{q.id}] {q.at}: {q.ask}", "  "))
        if q.choices:
            print(wrap(f"choose from: {', '.join(q.choices)}", "      "))
        if a.step is None:
            print("      (this run never gets there: no answer)")
        elif reveal:
            print(f"      answer: {clean(questions.text(a.value))}  (state after step {a.step})")
        else:
            print("      ?")
    print()


def print_claims(model, sc, trace) -> None:
    """The scenario text's checked claims, each marked as met or not by this run."""
    own = model.variant.name == (sc.variant or model.default_variant)  # claims are written for that run
    why = dict(expect.check(model, trace, sc.expect, strict=own))
    print("Claims of the scenario's text, checked on this run:")
    for e in sc.expect:
        print(wrap(f"[{'no' if e in why else 'ok'}] {e.claim}" + (f" ({why[e]})" if e in why else ""), "  "))


def plain(value: Any) -> str:
    """A counter, a per-actor table or a list as short text: ``R=3, U=0``; a table in a table in
    parentheses: ``F1=(mm.mmap_lock=3, vmas.0=1)``."""
    if isinstance(value, dict):
        return ", ".join(f"{k}=({plain(v)})" if isinstance(v, dict) else f"{k}={plain(v)}"
                         for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)


def wrap(text: str, indent: str, hyphens: bool = True) -> str:
    """``hyphens`` False: never break a line inside a hyphenated name."""
    return textwrap.fill(clean(" ".join(text.split())), WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=hyphens)


def clean(text: str) -> str:
    """One printable line: control characters and lone surrogates become escapes."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


if __name__ == "__main__":
    sys.exit(main())
