"""kstep's command line, in the tradition of the OSTEP homework simulators.

    kstep list [MECH] [--schema]
    kstep run MECH --scenario S [-s SEED | -P SCHEDULE | --round-robin] [-c] [--json F] [--html F]
    kstep explore MECH --scenario S [--max-states N] [--json F] [--html F]
    kstep show TRACE.json [--html F]
    kstep check MECH LOG
    kstep grade EXERCISE SUBMISSION [--student ID] [--config COURSE.toml] [--out DIR] | --batch DIR
    kstep release --config COURSE.toml --roster CSV --out DIR

``run`` prints a problem: the step table with ``?`` where the student must work out the state;
``-c`` computes the answers.  ``explore`` checks every interleaving and gives a verdict.  ``check``
replays an observation log written by the kernel-lab C port, step by step, against the model.

Exit status: 0 success (for explore: clean, the whole state space was searched; for check: every
logged step is one the model allows); 1 explore found a violated invariant or a deadlock, or check
found a step the model does not allow; 2 bad input, explained in one line on stderr; 3 explore stopped
at --max-states before exhausting the state space.  Anything else that goes wrong is a bug in kstep
and fails loudly with its traceback (Python's exit status 1).

This module only parses, formats and chooses exit codes; the models, schedulers, explorer,
scenarios and traces are the library's.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any, Optional, Sequence

from . import __version__
from .engine import Random, RoundRobin, Scripted, explore, simulate
from .engine import expect, questions
from .engine import scenario as scenarios
from .engine import trace as traces
from .errors import UserError
from .models import MODELS, make_model, model_class

OK, VIOLATION, BAD_INPUT, BOUNDED = 0, 1, 2, 3
MAX_SEED = 2**64 - 1  # SplitMix64 takes a 64-bit seed, and a trace records it as a non-negative integer
RUN_MAX_STEPS = 100_000  # a run that neither finishes nor deadlocks stops here unless --steps says otherwise
EXPLORE_MAX_STATES = 1_000_000
WIDTH = 96  # where descriptions wrap

# Characters that would break a one-line message or a table row: C0/C1 controls, the Unicode line
# and paragraph separators, and lone surrogates (a filename that was not UTF-8).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        for k, arg in enumerate(argv, start=1):
            if "\x00" in arg:  # no real command line can carry one; a path with it cannot be opened
                raise UserError(f"argument {k} contains a NUL character")
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help and --version print and exit; errors raise UserError instead
            return e.code if isinstance(e.code, int) else OK
        return args.run(args)
    except UserError as e:
        print(f"kstep: {clean(str(e))}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("kstep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kstep run ... | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush stays quiet
        return 128 + signal.SIGPIPE


# --- parsing ------------------------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse, with its errors turned into kstep's one line and exit status 2."""

    def error(self, message: str):
        raise UserError(f"{message} (see '{self.prog} --help')")


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
    p.add_argument("--steps", type=positive, metavar="N", help=f"stop after N steps (default {RUN_MAX_STEPS})")
    p.add_argument("-c", "--compute", action="store_true", help="show the state columns, counters and outcome")
    outputs(p, "the trace")
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("explore", help="check every interleaving; exit 0 only when clean", allow_abbrev=False,
                       description="Breadth-first search of every reachable state.  Exit 0: clean (exhausted, "
                                   "every invariant holds); 1: violation or deadlock, with the shortest "
                                   "counterexample; 3: stopped at --max-states, NOT clean.")
    mechanism_and_scenario(p)
    p.add_argument("--max-states", type=positive, default=EXPLORE_MAX_STATES, metavar="N",
                   help=f"stop after N distinct states (default {EXPLORE_MAX_STATES})")
    p.add_argument("--no-symmetry", dest="symmetry", action="store_false",
                   help="store every state, not one per orbit of interchangeable CPUs")
    outputs(p, "the counterexample")
    p.set_defaults(run=cmd_explore)

    p = sub.add_parser("show", help="replay a saved trace: its table, answers and (--html) animation",
                       allow_abbrev=False)
    p.add_argument("trace", metavar="TRACE.json", help="a trace written by run --json or explore --json")
    p.add_argument("--html", metavar="FILE", help="write the animation as a standalone, offline HTML page")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser("check", help="replay an observation log (kernel-lab C port) against the model",
                       allow_abbrev=False,
                       description="Replay LOG, one logged step per line, through the model.  Exit 0: every "
                                   "step is one the model allows; 1: the first one it does not allow (the line, "
                                   "and why); 2: the log is not a well-formed observation log.")
    p.add_argument("mechanism", metavar="MECH")
    p.add_argument("log", metavar="LOG", help="an observation log ('# kstep-log MECH ...' header, then one "
                                               "'<ticket> <cpu> <label> <before> <after>' line per step)")
    p.set_defaults(run=cmd_check)

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
    p.add_argument("--jobs", type=positive, default=1, metavar="N", help="--batch: grade N submissions at a time")
    p.add_argument("--sandbox", choices=sandbox_modes(), default="bwrap",
                   help="bwrap (default) or the weaker user mode (docs/instructor/gradescope.md)")
    p.add_argument("--kernel-lab", metavar="DIR", help="the kernel lab to build C submissions against "
                                                       "(default: kernel-lab beside the exercises)")
    p.add_argument("--check-sandbox", action="store_true", help="only check that the sandbox works here")
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

    top.set_defaults(run=lambda args: top.error("choose a command: list, run, explore, show, check, grade or release"))
    return top


def mechanism_and_scenario(p: Parser) -> None:
    p.add_argument("mechanism", metavar="MECH")
    p.add_argument("--scenario", required=True, metavar="S",
                   help="a bundled scenario's name (kstep list MECH) or a path to a .toml file")
    p.add_argument("--variant", metavar="V", help="a variant of the mechanism (default: the kernel's own)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override one scenario value, e.g. threads.0.sections=3 (TOML value; repeatable)")


def outputs(p: Parser, what: str) -> None:
    p.add_argument("--json", metavar="FILE", help=f"write {what} as a kstep trace (JSON)")
    p.add_argument("--html", metavar="FILE", help=f"write {what} as a standalone, offline HTML animation")


def positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is not positive")
    return n


def seed(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= n <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"{n} is out of range 0..{MAX_SEED}")
    return n


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
    lines += ["", "exit status: 0 ok (explore: clean), 1 explore found a violation (check: an illegal step), "
                  "2 bad input, 3 explore stopped at --max-states (not clean)"]
    return "\n".join(lines)


# --- commands -----------------------------------------------------------------------------------------


def cmd_list(args) -> int:
    if args.mechanism is None:
        if args.schema:
            raise UserError("--schema needs a mechanism: kstep list MECH --schema")
        print("Mechanisms (kstep list MECH for details):")
        for name, cls in MODELS.items():
            print(f"\n{name} — {cls.title}")
            print(f"  scenarios: {', '.join(scenarios.bundled(name)) or '(none)'}")
            print(f"  variants:  {', '.join(variant_tag(cls, v) for v in cls.variants)}")
        return OK
    cls = model_class(args.mechanism)
    print(f"{cls.name} — {cls.title}")
    print(f"\nScenarios (kstep run {cls.name} --scenario NAME):")
    for name in scenarios.bundled(cls.name):
        sc = scenarios.load(cls.name, cls.scenario_schema, name)
        print(f"  {name}")
        print(wrap(sc.description, "      "))
    print("\nVariants (--variant NAME):")
    for name, variant in cls.variants.items():
        print(f"  {variant_tag(cls, name)}")
        print(wrap(variant.doc, "      "))
    if args.schema:
        print("\nScenario file (TOML; a run can change one value with --set KEY.PATH=VALUE):")
        full = scenarios.Table({**scenarios.COMMON, **cls.scenario_schema.keys})
        for line in full.describe("  "):
            print(line)
    return OK


def cmd_run(args) -> int:
    model, sc = model_and_scenario(args)
    check_outputs(args.json, args.html)
    scheduler, seed_used, how = pick_scheduler(args, sc)
    state = model.initial(sc.config)
    trace = simulate(model, state, scheduler, max_steps=args.steps or RUN_MAX_STEPS,
                     scenario=sc.name, config=sc.config, seed=seed_used)
    print(f"{model.name} ({model.title}), variant {model.variant.name}")
    print(f"scenario {clean(sc.name)}:")
    print(wrap(sc.description, "  "))
    print(f"look for:\n{wrap(sc.look_for, '  ')}")
    print(f"scheduler: {clean(how)}\n")
    print_table(model, trace, reveal=args.compute)
    print()
    if sc.questions:
        print_questions(model, sc, trace, reveal=args.compute)
    if args.compute:
        print_answers(model, trace)
        if how.startswith("the scenario's own") and sc.expect:
            print_claims(model, sc, trace)
    else:
        print("Work out the ? columns and how the run ends, then rerun with -c for the answers.")
    write_outputs(model, trace, args.json, args.html)
    return OK


def cmd_explore(args) -> int:
    model, sc = model_and_scenario(args)
    check_outputs(args.json, args.html)
    state = model.initial(sc.config)
    checks = [inv.name for inv in model.invariants] + ["deadlock"]
    print(f"exploring {model.name} variant {model.variant.name}, scenario {clean(sc.name)}")
    print(f"checks: {', '.join(checks)}")
    result = explore(model, state, max_states=args.max_states, progress=report_progress,
                     scenario=sc.name, config=sc.config, symmetry=args.symmetry)
    units = [c for c in model.symmetric_units(state) if len(c) > 1] if args.symmetry else []
    print(f"states: {result.states}" + (" (one per symmetry orbit; interchangeable units: "
                                         f"{'; '.join(' '.join(map(str, c)) for c in units)})" if units else ""))
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
                  f"no harm invariant was violated before --max-states {args.max_states} stopped the search")
        cex = result.counterexample
        print(f"\nshortest counterexample{'' if result.harm else ' to the broken assertion'} ({len(cex)} steps):")
        print_table(model, cex, reveal=True)
        print()
        write_outputs(model, cex, args.json, args.html)
        return VIOLATION
    if not result.exhausted:
        print(f"verdict: NOT clean: the search stopped at --max-states {args.max_states} before exhausting "
              f"the state space (no violation among the states it saw)")
        skipped(args)
        return BOUNDED
    print("verdict: clean: every reachable state explored; every invariant holds and nothing deadlocks")
    skipped(args)
    return OK


def cmd_show(args) -> int:
    check_outputs(None, args.html)
    trace, model = load_trace(args.trace)
    print(f"{model.name} ({model.title}), variant {model.variant.name}")
    print(f"scenario {clean(trace.scenario) or '(unnamed)'}, "
          f"scheduler: {clean(trace.scheduler)}{'' if trace.seed is None else f', seed {trace.seed}'}\n")
    print_table(model, trace, reveal=True)
    print()
    print_answers(model, trace)
    write_outputs(model, trace, None, args.html)
    return OK


def cmd_check(args) -> int:
    from .lab.check import check_file  # the log checker is only loaded by the command that uses it

    result = check_file(args.mechanism, args.log, progress=report_check_progress)
    h = result.header
    extra = "".join(f", {k} {h[k]}" for k in ("irq", "steal_spins", "head_spins") if k in h)
    print(f"checking {clean(args.log)} against {result.mechanism} variant {result.variant} "
          f"({h['cpus']} CPUs, {h['acquisitions']} acquisitions each, pending_bits {h['pending_bits']}{extra})")
    if not result.ok:
        print(f"line {result.line}: {clean(result.text)}")
        print(f"verdict: NOT a step the model allows: {clean(result.why)}")
        print(f"(the {plural(result.steps, 'step')} and {plural(result.acquisitions, 'acquisition')} "
              f"before it were legal)")
        return VIOLATION
    print(f"steps: {result.steps}")
    print(f"acquisitions: {result.acquisitions}")
    print(f"seconds: {result.seconds:.2f}")
    if not result.finished:
        print("note: the log stops before every CPU has finished (the steps it has are legal)")
    print("verdict: every logged step is one the model allows")
    return OK


def sandbox_modes() -> tuple:
    from .grading.sandbox import MODES

    return MODES


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
    return OK


def gradescope_student(path: Path, field: str) -> str:
    """The submitter's id in Gradescope's submission_metadata.json (its first user's ``field``)."""
    import json

    try:
        users = json.loads(path.read_text()[:1 << 20])["users"]
        value = users[0][field]
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
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
    print(f"  students/<id>/<exercise>/   one bundle per student (no solutions, no hidden tests)")
    print(f"  gradescope/<exercise>.zip   autograders (they hold the course secret: upload, do not share)")
    return OK


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def report_check_progress(lines: int) -> None:
    print(f"check: {lines:,} steps ...", file=sys.stderr, flush=True)


# --- helpers the commands share --------------------------------------------------------------------------


def variant_tag(cls, name: str) -> str:
    if name == cls.default_variant:
        return f"{name} (default)"
    return f"{name} (broken)" if cls.variants[name].broken else name


def model_and_scenario(args):
    """The scenario, and the model in --variant, else the variant the scenario names, else the default."""
    model = make_model(args.mechanism, args.variant)
    sc = scenarios.load(model.name, model.scenario_schema, args.scenario, args.overrides)
    if args.variant is None and sc.variant:
        model = make_model(args.mechanism, sc.variant)
    questions.validate(model, sc.questions)
    return model, sc


def pick_scheduler(args, sc):
    """-P, --round-robin, -s; else the scenario's own schedule; else random from seed 1.

    Returns the scheduler, the seed a trace records (None unless random) and a line that says how
    to get the same run again.
    """
    if args.schedule is not None:
        try:
            return Scripted(args.schedule), None, f"scripted -P {args.schedule!r}, then round-robin"
        except UserError as e:
            raise UserError(f"-P: {e}") from None
    if args.round_robin:
        return RoundRobin(), None, "round-robin"
    seed_used = args.seed
    if seed_used is None and sc.schedule:
        try:
            return Scripted(sc.schedule), None, f"the scenario's own, {sc.schedule!r}, then round-robin"
        except UserError as e:
            raise UserError(f"scenario {sc.name}: {e}") from None
    if seed_used is None:
        seed_used = 1
    return Random(seed_used), seed_used, f"random, seed {seed_used} (-s to change, -P to script, --round-robin)"


def load_trace(path: str):
    return traces.load(path, make_model)


def check_outputs(json_path: Optional[str], html_path: Optional[str]) -> None:
    """Refuse unwritable output paths before any work is done (the writers check again)."""
    if json_path is not None and json_path == html_path:
        raise UserError(f"--json and --html both name {json_path}")
    for flag, path in (("--json", json_path), ("--html", html_path)):
        if path is None:
            continue
        p = Path(path)
        try:
            if p.is_dir():
                raise UserError(f"{flag} {path}: is a directory")
            if not p.parent.is_dir():
                raise UserError(f"{flag} {path}: directory {p.parent} does not exist")
        except OSError as e:
            raise UserError(f"{flag} {path}: {e.strerror}") from None


def write_outputs(model, trace, json_path: Optional[str], html_path: Optional[str]) -> None:
    if json_path is not None:
        trace.write(model, json_path)
        print(f"wrote trace {json_path}")
    if html_path is not None:
        from .views import save_html  # Bokeh is heavy: only the command that draws loads it

        save_html(trace, model, html_path)
        print(f"wrote animation {html_path}")


def skipped(args) -> None:
    for path in (args.json, args.html):
        if path is not None:
            print(f"no counterexample: {path} not written")


def report_progress(states: int, transitions: int, depth: int) -> None:
    print(f"explore: {states:,} states, {transitions:,} transitions, depth {depth} ...",
          file=sys.stderr, flush=True)


# --- formatting -----------------------------------------------------------------------------------------


def print_table(model, trace, *, reveal: bool) -> None:
    """The OSTEP step table: the initial state is given, later states are '?' unless revealed."""
    sources = model.sources()
    summaries = [model.summary(s) for s in trace.states]
    columns: list[str] = []
    for row in summaries:
        columns += [c for c in row if c not in columns]
    head = ["step", "tick", "actor", "label", "kernel function"] + columns
    rows = [["0", "", "", "(initial)", ""] + [str(summaries[0].get(c, "")) for c in columns]]
    for k, (action, tick) in enumerate(zip(trace.actions, trace.ticks), start=1):
        state_cells = [str(summaries[k].get(c, "")) if reveal else "?" for c in columns]
        rows.append([str(k), str(tick), action.actor, action.label, str(sources[action.label])] + state_cells)
    rows = [[clean(cell) for cell in row] for row in rows]
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    right = {0, 1}  # numbers
    for r in [head] + rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        print("  ".join(cells).rstrip())


def print_answers(model, trace) -> None:
    print("Answers:")
    for key, value in model.answers(trace).items():
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
    why = dict(expect.check(model, trace, sc.expect))
    print("Claims of the scenario's text, checked on this run:")
    for e in sc.expect:
        print(wrap(f"[{'no' if e in why else 'ok'}] {e.claim}" + (f" ({why[e]})" if e in why else ""), "  "))


def plain(value: Any) -> str:
    """A counter, a per-actor table or a list as short text: ``R=3, U=0``."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={plain(v)}" for k, v in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "none"
    return str(value)


def wrap(text: str, indent: str) -> str:
    return textwrap.fill(clean(" ".join(text.split())), WIDTH, initial_indent=indent, subsequent_indent=indent)


def clean(text: str) -> str:
    """One printable line: control characters and lone surrogates become escapes."""
    return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


if __name__ == "__main__":
    sys.exit(main())
