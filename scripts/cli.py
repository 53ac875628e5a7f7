"""The leaderboard loop from one command: test, bench, compare, tune, search-check, tiles, helion-tune,
helion-tune-lanes, profile, sass, estimate, cases, submit, judge, remote (list, show, standings), history.

    python scripts/cli.py --help        (or: python -m scripts --help)

Each command is a thin layer over plain functions in scripts/ and eval.py, which the tests call
directly. Each shared option is defined once below and means the same wherever it appears: FILE is
the submission-style file (default submission.py), --shapes adds cases, --rep-ms is the timing window,
--json FILE writes one report, --out DIR a folder of results, --dry-run writes nothing. The README's
command table says which command takes which.
"""
import dataclasses
import datetime
import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python scripts/cli.py`: the workspace root, not scripts/, leads the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

try:
    import click

    import eval as harness
    from scripts import (HELION_SUBMISSION, ROOT, SUBMISSION, estimate, history, leaderboard, registry, remote,
                         whole_cases)
except ModuleNotFoundError as missing:  # a Python without the README's requirements: one sentence, not a traceback
    sys.exit(f"{missing.name} is not installed for {sys.executable}; install the README's requirements"
             f" (or activate the venv they went into), then run this again")

ROUNDS = 2  # interleaved rounds for compare and tune: the median (compare) or best (tune) is kept
FILE = click.argument("file", required=False, default=SUBMISSION,
                      type=click.Path(exists=True, dir_okay=False, path_type=Path))


def known_shapes(ctx, param, values):
    """Each --shapes value a named set or BxDxS[xW], refused before anything runs."""
    from scripts.compare import SHAPE_SETS

    for value in values:
        if value not in SHAPE_SETS:
            try:
                harness.parse_label(value)
            except ValueError as error:
                raise click.BadParameter(f"{error}, nor a named set ({', '.join(SHAPE_SETS)})") from None
    return values


def positive_ms(ctx, param, value):
    if not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value} must be a number of milliseconds above 0")
    return value


SHAPES = click.option("--shapes", multiple=True, callback=known_shapes,
                      help="more cases beyond the leaderboard's: BxDxS[xW], or 'large', 'small' (repeatable)")
REP_MS = click.option("--rep-ms", default=float(harness.REP_MS["benchmark"]), show_default=True, callback=positive_ms,
                      help="timing window per measurement, in ms (the runner's)")
JSON = click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the record here")


def rounds_option(kept: str):
    return click.option("--rounds", default=ROUNDS, show_default=True, type=click.IntRange(min=1),
                        help=f"interleaved rounds; {kept} is kept")


def out_option(what: str, default: str):
    return click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
                        help=f"folder for {what} [default: {default}]")


def dry_run_option(does: str):
    return click.option("--dry-run", is_flag=True, help=f"{does}; nothing is written")


def correctness_suite(path: Path) -> tuple[bool, str]:
    """The task's tests on this machine (the GPU if there is one, else the interpreter): (ok, failures)."""
    run = harness.run_suite("test", harness.cases_from_task("tests"), Path(path))
    failures = [f"{c['spec']}: {c['error']}" for c in run["cases"] if not c["ok"]]
    return run["passed"], "; ".join(failures)


def require_gpu(what: str) -> None:
    if not harness.gpu_available():
        raise click.ClickException(f"{what} times kernels on the GPU, and no CUDA GPU is visible here.")


def default_out(kind: str) -> Path:
    """results/runs/KIND/GPU: ignored by git, so a local run leaves the tree as it was."""
    return ROOT / "results" / "runs" / kind / harness.device_name().lower().replace(" ", "-")


def write_record(out_dir: Path, name: str, fields: dict) -> Path:
    """out_dir/name: the fields, headed by the device, the commit and the date, as JSON."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    record = {"device": harness.device_name(), "commit": history.git_commit(), "date": datetime.date.today().isoformat()}
    harness.write_whole(path, json.dumps({**record, **fields}, indent=2, default=list), flag="--out")
    return path


def finish_cases_run(run: whole_cases.CasesRun, path: Path) -> None:
    """The last line of a command that measures case by case: where its record went, or, where a signal ended
    it, what it kept, with the signal's exit code (128 + the signal)."""
    if run.stop:
        click.echo(run.interrupted_line(path), err=True)
        sys.exit(run.stop.exit_code)
    click.echo(f"wrote {path}")


def check_writable(json_out, inputs, keeps_history: bool) -> None:
    """Refuse, before a run starts, a --json path the report cannot be written whole to (or that is one of
    the run's inputs, or the history), and, for a run that keeps a history entry, a history it cannot be
    appended to."""
    problem = (json_out is not None and harness.output_problem(json_out, inputs=inputs, history=history.HISTORY)
               or keeps_history and history.append_problem(inputs=inputs))
    if problem:
        raise click.ClickException(f"{problem}; nothing was run")


@dataclasses.dataclass
class Kept:
    """Where a run was kept ("in the history", "in PATH") and why a place failed (None: none did)."""
    places: list
    failure: str | None

    def where(self, first: str = "") -> str:
        """The places as a phrase, with what failed after them."""
        places = " and ".join(filter(None, (first, *self.places))) or "nowhere"
        return f"{places}; {self.failure}" if self.failure else places


def keep_run(entry_of, json_out, record: dict) -> Kept:
    """The run kept: its history entry (entry_of(record) is true where it appended one), then its --json
    report. Each is tried even where the other fails, so what was measured is never lost to the first one."""
    places, failures = [], []
    with harness.signals_held():  # a signal now waits until both are written
        try:
            if entry_of(record):
                places.append("in the history")
        except history.HistoryError as error:
            failures.append(str(error))
        if json_out:
            try:
                harness.write_whole(json_out, json.dumps(record, indent=2))
                places.append(f"in {json_out}")
            except harness.TaskError as error:
                failures.append(str(error))
    return Kept(places, "; ".join(failures) or None)


def load_submission_module():
    """submission.py as a kernel file, for the commands that tune or check its search; one sentence where it
    does not load."""
    try:
        return registry.load_kernel_file(SUBMISSION, "submission")
    except ValueError as error:
        raise click.ClickException(str(error)) from None


def run_eval(mode: str, file: Path, tests_file, json_out, timeout) -> None:
    check_writable(json_out, (file, tests_file), keeps_history=mode != "test")  # record_report skips tests
    try:
        report = harness.run_local(mode, file.resolve(), tests_file, timeout)
    except harness.TaskError as error:
        raise click.ClickException(str(error)) from None
    except harness.Cut as cut:
        kept = keep_run(history.record_report, json_out, cut.kept)
        click.echo(harness.cut_sentence(cut.kept, kept.where("above")), err=True)
        sys.exit(cut.exit_code)
    failure = keep_run(history.record_report, json_out, report).failure
    if failure:
        raise click.ClickException(f"the run finished ({'passed' if report['passed'] else 'failed'}), but {failure}")
    sys.exit(0 if report["passed"] else 1)


class Loop(click.Group):
    """The CLI's group: a malformed task.yml or an unreadable history is one sentence, never a traceback."""

    def invoke(self, ctx):
        previous = harness.interrupt_on_signals()  # SIGTERM and SIGHUP too: each command's `finally` ends its children
        try:
            with harness.output_may_close():
                return super().invoke(ctx)
        except (harness.TaskError, history.HistoryError, remote.RemoteError) as error:
            raise click.ClickException(str(error)) from None
        except ModuleNotFoundError as missing:  # the tools import torch, triton, helion, fla where a command needs them
            if missing.name is None:
                raise
            raise click.ClickException(f"{missing.name} is not installed for {sys.executable}, and this command needs"
                                       f" it; the README's requirements files list what the workspace uses") from None
        except KeyboardInterrupt as stop:
            stop = harness.interrupted_of(stop)
            click.echo(f"interrupted ({stop.name}); the processes this command started were ended", err=True)
            sys.exit(stop.exit_code)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def positive_seconds(ctx, param, value):
    if value is not None and harness.timeout_problem(value):
        raise click.BadParameter(f"{value}: {harness.timeout_problem(value)}")
    return value


@click.group(cls=Loop, context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """The causal_conv1d leaderboard loop."""


TESTS_FILE = click.option("--tests-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                          help="cases in the runner's format instead of task.yml's")
TIMEOUT = click.option("--timeout", type=float, callback=positive_seconds,
                       help="seconds the run may take (default: task.yml's)")


def eval_options(command):
    """FILE, --tests-file, --json and --timeout: what eval.py's local mode takes."""
    return FILE(TESTS_FILE(JSON(TIMEOUT(command))))


@cli.command()
@eval_options
def test(file, tests_file, json_out, timeout):
    """Run the task's tests on FILE (eval.py test)."""
    run_eval("test", file, tests_file, json_out, timeout)


@cli.command()
@eval_options
def bench(file, tests_file, json_out, timeout):
    """Time FILE on the task's benchmarks under the leaderboard's timing (eval.py benchmark)."""
    run_eval("benchmark", file, tests_file, json_out, timeout)


@cli.command()
@FILE
@click.option("--variant", "variants", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="another submission-style file to time beside FILE (repeatable)")
@SHAPES
@rounds_option("the median round")
@REP_MS
@click.option("--no-reference", is_flag=True, help="skip the slow cuDNN reference")
@out_option("compare.json and compare.png", "results/runs/compare/GPU")
def compare(file, variants, shapes, rounds, rep_ms, no_reference, out_dir):
    """Time FILE beside the copies of x, the reference, torch.compile, the peers installed (Dao-AILab's
    causal-conv1d, flash-linear-attention's kernels) and the variants."""
    check_writable(None, (file, *variants), keeps_history=True)
    require_gpu("compare")
    from scripts import compare as cmp

    cases = cmp.resolve_cases(list(shapes))
    try:
        listed = registry.for_compare(file, list(variants), reference_too=not no_reference)
        impls = cmp.build_impls(listed)  # imports each file
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    ran = cmp.add_same_tile_copies(impls, cases)
    with click.progressbar(length=rounds * len(cases) * len(impls), label="timing", show_eta=True) as bar:
        run = cmp.run_compare(impls, cases, rounds, rep_ms, progress=bar.update)
    summary = cmp.summarize(run.results, cases, impls, ran)
    device = harness.device_name()
    stopped = run.stop.name if run.stop else None
    path = cmp.write_results(summary, cases, device, history.git_commit(), datetime.date.today().isoformat(),
                             out_dir or default_out("compare"),
                             rounds={"asked": rounds, "done": run.rounds_done, "interrupted": stopped})
    if run.stop:  # the whole rounds are kept and shown, but a short run neither enters the history nor estimates
        click.echo(cmp.format_table(summary, cases))
        click.echo(f"interrupted ({stopped}) after {run.rounds_done} of {rounds} rounds: the medians above are of "
                   f"those rounds, written to {path}; not recorded in the history", err=True)
        sys.exit(run.stop.exit_code)
    cmp.record_ours(listed, summary, cases, device)
    click.echo(cmp.format_table(summary, cases))
    report = estimate.for_run(summary, [harness.case_label(a) for a in cases], device, history.git_commit(),
                              datetime.date.today().isoformat())
    click.echo(estimate.format_estimate(report))
    estimate.record_estimates([impl.name for impl in listed if impl.kind in registry.OURS], report)
    click.echo(f"wrote {path}")


@cli.command()
@SHAPES
@rounds_option("the best time")
@REP_MS
@dry_run_option("show the new table and its diff")
def tune(shapes, rounds, rep_ms, dry_run):
    """Sweep (BLOCK, num_warps) per shape on this GPU and write the winners that beat the heuristic by its margin."""
    require_gpu("tune")
    from scripts import compare as cmp, configs, tune as tuner

    module = load_submission_module()
    gpu = module.gpu_key(0)
    cases = cmp.resolve_cases(list(shapes))
    with click.progressbar(length=rounds * len(cases) * len(module.CONFIG_SPACE), label=f"tuning on {gpu}") as bar:
        results = tuner.sweep(module, gpu, cases, module.CONFIG_SPACE, rep_ms, rounds, progress=bar.update)
    for shape, timings in results.items():
        ranked = sorted(timings.items(), key=lambda kv: kv[1])
        click.echo(f"{harness.case_label(dict(zip(harness.SHAPE_FIELDS, shape)))}: "
                   + ", ".join(f"{configs.tile_label(cfg)}={us:.2f}us" for cfg, us in ranked[:5]))
    old = SUBMISSION.read_text()
    new = tuner.rewrite(old, module, gpu, results)
    click.echo(configs.diff(old, new, SUBMISSION.name) or "the table already holds the best configs")
    if dry_run or new == old:
        return
    ok, message = tuner.apply_safely(SUBMISSION, new, correctness_suite)
    if not ok:
        raise click.ClickException(f"the tuned file failed the correctness suite, so the old one was restored: {message}")
    click.echo("submission.py updated; the correctness suite passes")


@cli.command(name="search-check")
@SHAPES
@click.option("--processes", default=3, show_default=True, type=click.IntRange(min=1),
              help="fresh processes the search runs in, per case")
@rounds_option("the best time of tune's sweep")
@REP_MS
@out_option("search_check.json", "results/runs/search_check/GPU")
def search_check(shapes, processes, rounds, rep_ms, out_dir):
    """The first-call search in fresh processes beside a full sweep in the same call: same pick, near the best?"""
    require_gpu("search-check")
    from scripts import compare as cmp, search_check as checker

    module = load_submission_module()
    if module.CONFIGS:
        click.echo(f"note: submission.py's table has {len(module.CONFIGS)} entries; the search runs only where none applies")
    cases = cmp.resolve_cases(list(shapes))
    with click.progressbar(length=rounds * len(cases) * len(module.CONFIG_SPACE), label="sweeping") as bar:
        try:
            run = checker.check(cases, processes, rounds, rep_ms, progress=bar.update)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            raise click.ClickException(str(error))
    path = write_record(out_dir or default_out("search_check"), "search_check.json",
                        {"processes": processes, "margin": module.TUNE_MARGIN, "cases_run": run.record(),
                         "cases": run.results})
    for entry in run.results.values():
        click.echo("\n".join(entry["lines"]))
    click.echo(checker.format_table(run.results, module.TUNE_MARGIN))
    finish_cases_run(run, path)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@SHAPES
@rounds_option("the median")
@REP_MS
@click.option("--top", default=5, show_default=True, help="configs shown per kernel and case")
@click.option("--flush", default="memset", show_default=True, type=click.Choice(harness.FLUSHES),
              help="what evicts x from L2 before each call: the runner's memset of a 256 MB buffer (L2 left "
                   "dirty), or a read of it (L2 left clean; each time then also carries the call's output "
                   "written back during the next read, a like charge on every config)")
@out_option("tiles.json", "results/runs/tiles/GPU")
def tiles(files, shapes, rounds, rep_ms, top, flush, out_dir):
    """Each FILE's kernel at every config it is built for, beside a Triton copy at the same tile."""
    from scripts import compare as cmp, tiles as tiler

    try:  # the files first: what is wrong with one is said on any machine
        modules = tiler.load_modules(list(files or (SUBMISSION,)))
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    require_gpu("tiles")
    cases = cmp.resolve_cases(list(shapes))
    with click.progressbar(length=tiler.timings_count(modules, cases, rounds), label="timing tiles") as bar:
        run = tiler.sweep(modules, cases, rounds, rep_ms, progress=bar.update, flush=flush)
    summary = tiler.summarize(run.results)
    path = write_record(out_dir or default_out("tiles"), "tiles.json",
                        {"flush": flush, "cases_run": run.record(), "cases": summary})
    if flush != "memset":
        click.echo(f"timed after a {flush} flush, not the runner's memset: each time also carries the call's output "
                   "written back during the next flush, a like charge on every config")
    click.echo(tiler.format_table(summary, top))
    finish_cases_run(run, path)


@cli.command(name="helion-tune")
@click.option("--effort", default="quick", show_default=True, type=click.Choice(("none", "quick", "full")),
              help="Helion's search effort; none: no search, the file's config timed beside the hand tiles")
@click.option("--timing", default="runner", show_default=True, type=click.Choice(("runner", "helion")),
              help="what ranks configs: the leaderboard's timing, or Helion's do_bench")
@click.option("--tests", "with_tests", is_flag=True, help="also tune the test shapes")
@out_option("configs.json and Helion's search logs", "results/helion/search")
@dry_run_option("search and print the picks, Helion's logs in a temporary folder")
def helion_tune(effort, timing, with_tests, out_dir, dry_run):
    """Helion's autotuner on every task shape; its picks hard-coded into the Helion submission."""
    require_gpu("helion-tune")
    from scripts import helion_autotune

    shapes = [c.args for c in harness.cases_from_task("benchmarks")]
    if with_tests:
        shapes += [c.args for c in harness.cases_from_task("tests")]
    if dry_run and out_dir is not None:
        raise click.ClickException("--dry-run writes nothing, so it takes no --out")
    out_dir = None if dry_run else out_dir or ROOT / "results" / "helion" / "search"
    try:
        helion_autotune.autotune(shapes, effort, timing, out_dir, write=not dry_run, echo=click.echo)
    except helion_autotune.EffortError as error:
        raise click.ClickException(str(error)) from None
    if not dry_run:
        click.echo(f"{HELION_SUBMISSION.relative_to(ROOT)} updated")


@cli.command(name="helion-tune-lanes")
@out_option("lanes_configs.json", "results/runs/helion-lanes/GPU")
@dry_run_option("time and print the picks")
def helion_tune_lanes(out_dir, dry_run):
    """The Helion file's lane kernel: its candidates on every benchmark shape, timed as the runner times; the picks
    hard-coded into LANES_CONFIGS."""
    require_gpu("helion-tune-lanes")
    from scripts import helion_autotune

    if dry_run and out_dir is not None:
        raise click.ClickException("--dry-run writes nothing, so it takes no --out")
    shapes = [c.args for c in harness.cases_from_task("benchmarks")]
    out_dir = None if dry_run else out_dir or default_out("helion-lanes")
    try:
        helion_autotune.tune_lanes(shapes, out_dir, write=not dry_run, echo=click.echo)
    except helion_autotune.LanesNotServed as error:
        raise click.ClickException(str(error)) from None
    if not dry_run:
        click.echo(f"{HELION_SUBMISSION.relative_to(ROOT)} updated; every timing in {out_dir / 'lanes_configs.json'}")


def parse_tiles(ctx, param, values) -> list[tuple[int, int]]:
    tiles = []
    for value in values:
        block, _, warps = value.partition("/")
        if not (block.isdigit() and warps.isdigit() and int(block) > 0 and int(warps) > 0):
            raise click.BadParameter(f"{value!r} is not a tile BLOCK/WARPS, e.g. 1024/1")
        tiles.append((int(block), int(warps)))
    return tiles


@cli.command()
@FILE
@click.option("--case", "case_index", type=int, help="which leaderboard case (0-based; 0 where neither this nor --shape is given)")
@click.option("--shape", help="a shape BxDxS[xW] instead of a leaderboard case (e.g. 4x2560x4096, a large one)")
@click.option("--tile", "tiles", multiple=True, callback=parse_tiles,
              help="BLOCK/WARPS (repeatable): FILE at each tile beside a Triton copy at the same tile, with stall "
                   "reasons, instructions a output, hit rates, registers and occupancy")
@click.option("--build", "builds", multiple=True, help="with --tile: also FILE's configs of this build (e.g. cuda)")
@out_option("ncu's raw CSV and the table", "results/runs/profile/GPU")
def profile(file, case_index, shape, tiles, builds, out_dir):
    """Nsight Compute on one leaderboard case or shape: FILE beside the fastest copy of x, or, with --tile,
    beside a copy at each tile."""
    from scripts import ncu_profile as prof

    cases = harness.cases_from_task("benchmarks")
    if shape is not None and case_index is not None:
        raise click.ClickException("give --case or --shape, not both: each names the one input profiled")
    if shape is not None:
        try:
            args = harness.parse_label(shape)
        except ValueError as error:
            raise click.ClickException(f"--shape: {error}") from None
    elif not 0 <= (case_index or 0) < len(cases):
        raise click.ClickException(f"--case must be 0 to {len(cases) - 1}: there are {len(cases)} leaderboard cases")
    else:
        args = cases[case_index or 0].args
    if builds and not tiles:
        raise click.ClickException("--build goes with --tile: it names which of FILE's configs to profile at each tile")
    problem = prof.unavailable()
    if problem:
        raise click.ClickException(problem)
    out_dir = out_dir or default_out("profile")
    try:
        if tiles:
            files = [file] + [f"{file}+{build}" for build in builds]
            table = prof.format_tiles(prof.profile_tiles(files, args, tiles, out_dir, echo=click.echo))
        else:
            table = prof.profile_side_by_side(file, args, out_dir, echo=click.echo)
    except (RuntimeError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(table)
    click.echo(f"wrote {out_dir}")


@cli.command()
@FILE
@click.option("--entry", help="the kernel to build, with its template arguments, e.g. "
                               "'causal_conv1d_shuffle<4, 16, true, false>' (W, groups a thread, evict-first, row grid)")
@click.option("--arch", default="sm_90", show_default=True, help="the GPU architecture to build for (sm_100: the B200)")
@out_option("sass.json, the listing and the cubin", "results/runs/sass/ARCH")
def sass(file, entry, arch, out_dir):
    """FILE's CUDA kernel built offline (NVRTC, no GPU) and read as SASS: registers, spills, the loads by
    scoreboard, the cp.async copies by commit group, and the FFMAs after the point where the last load or
    copy is first waited for."""
    from scripts import sass as offline

    try:
        module = registry.load_kernel_file(file, f"sass_{file.stem}")
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    source = getattr(module, "CUDA_SOURCE", None)
    if not isinstance(source, str):
        raise click.ClickException(f"{file.name} defines no CUDA_SOURCE string: sass reads a kernel file's CUDA kernel")
    if not entry:
        found = "; ".join(offline.kernel_entries(source)) or "none"
        raise click.ClickException(f"name the kernel and its template arguments with --entry (found: {found})")
    problem = offline.unavailable()
    if problem:
        raise click.ClickException(problem)
    out_dir = out_dir or ROOT / "results" / "runs" / "sass" / arch
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise click.ClickException(f"--out {out_dir}: the folder cannot be made ({error.strerror})") from None
    problem = harness.output_problem(out_dir / "sass.json", "--out")
    if problem:
        raise click.ClickException(problem)
    try:
        record, listing = offline.sass_record(source, entry, arch, out_dir)
    except (offline.SassError, OSError) as error:
        raise click.ClickException(str(error)) from None
    harness.write_whole(out_dir / "sass.txt", listing, flag="--out")
    write_record(out_dir, "sass.json", {"device": f"none: built offline for {arch}", "file": str(file), **record})
    click.echo(offline.format_record(record))
    click.echo(f"wrote {out_dir}")


@cli.command()
@click.argument("which", type=click.Choice(("tests", "benchmarks")))
def cases(which):
    """Print task.yml's tests or benchmarks as the runner's tests file (one case a line)."""
    for case in harness.cases_from_task(which):
        click.echo(case.spec)


@cli.command()
@FILE
@click.option("--mode", type=click.Choice(leaderboard.MODES), default="test", show_default=True)
@click.option("--gpu", help="override the file's '#!POPCORN gpu'")
@click.option("--leaderboard", "board", help="override the file's '#!POPCORN leaderboard'")
@click.option("--yes", is_flag=True, help="do not ask before a ranked (leaderboard) submission")
@dry_run_option("run the preflight and print the popcorn command only")
def submit(file, mode, gpu, board, yes, dry_run):
    """Preflight FILE, then submit it through popcorn-cli and record what the server says."""
    try:
        checked = leaderboard.preflight(file, board, gpu, correctness_suite, ROOT, need_popcorn=not dry_run,
                                        echo=click.echo, ask_server=leaderboard.ask_board)
    except leaderboard.PreflightError as error:
        raise click.ClickException(f"preflight refused {file.name}: {error}") from None
    unrecordable = history.append_problem(inputs=(file,))  # the server's answer must have a history to go to
    if unrecordable:
        raise click.ClickException(f"{unrecordable}; nothing was submitted")
    for note in checked["notes"]:
        click.echo(f"note: {note}")
    for warning in checked["warnings"]:
        click.echo(f"warning: {warning}")
    for warning in checked["caching"]:
        click.echo(f"warning: looks like caching across calls, {warning}")
    if dry_run:
        try:
            popcorn = leaderboard.check_popcorn()
        except leaderboard.PreflightError as error:  # the dry run goes on; the real submit would stop here
            popcorn = "popcorn-cli"
            click.echo(f"warning: a real submit would stop at its first step: {error}")
        output = history.REMOTE / "OUTPUT.txt"
        click.echo(" ".join(leaderboard.popcorn_command(popcorn, checked["leaderboard"], checked["gpu"], mode, file,
                                                        output)))
        return
    if mode == "leaderboard" and not yes:
        click.confirm(f"Submit {file.name} for a ranked run on {checked['gpu']}?", abort=True)
    submitted = leaderboard.submit(file, mode, checked, history.REMOTE, echo=click.echo)
    history.append_entry(history.submission_entry(submitted))
    click.echo(leaderboard.recorded_line(submitted))
    failure = leaderboard.submit_failure(submitted)
    if failure is not None and failure[0] != 1:  # a signal: one line, 128 + the signal
        click.echo(failure[1], err=True)
        sys.exit(failure[0])
    if failure is not None:
        raise click.ClickException(failure[1])


@cli.command(name="estimate")
@click.argument("compare_json", required=False, default=ROOT / "results" / "nvidia-h200" / "compare.json",
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
def estimate_cmd(compare_json):
    """What the B200 would say, from a recorded compare run (default results/nvidia-h200/compare.json): a range,
    each end's method, its rank (an estimate). It only prints; compare and judge keep theirs in the history."""
    try:
        click.echo(estimate.format_estimate(estimate.estimate(estimate.read_record(compare_json))))
    except estimate.EstimateError as error:
        raise click.ClickException(str(error)) from None


@cli.command(name="judge")
@FILE
@click.option("--seed", "secret", type=click.IntRange(min=1, max=2 ** 32 - 1),
              help="the secret chain's seed, up to 2^32 - 1 (default: random, recorded)")
@JSON
@dry_run_option("name the steps and run none")
def judge_cmd(file, secret, json_out, dry_run):
    """The runner's whole chain on this machine: compile step, test, benchmark, leaderboard, each a
    fresh process, once with the published seeds and once with a secret seed; popcorn's report."""
    from scripts import judge

    if dry_run:
        for step in judge.steps(file, harness.gpu_available()):
            click.echo(step)
        return
    check_writable(json_out, (file,), keeps_history=True)
    try:
        leaderboard.server_file_rules(file)  # the server's rules on the file, as submit applies them
    except leaderboard.PreflightError as error:
        raise click.ClickException(f"judge refused {file.name}: {error}") from None

    def keep(record) -> Kept:
        return keep_run(lambda kept: history.append_entry(history.judge_entry(kept)) or True, json_out, record)

    try:
        record = judge.judge(file.resolve(), ROOT, secret, echo=click.echo)
    except harness.Cut as cut:
        click.echo(f"{judge.verdict_sentence(cut.kept)}; its record is {keep(cut.kept).where()}", err=True)
        sys.exit(cut.exit_code)
    failure = keep(record).failure
    click.echo("")
    if record["on_gpu"]:
        click.echo(judge.popcorn_text(record))
    if record["public_s"] is not None:
        report = estimate.for_score(file.stem, record["public_s"] * 1e6, record["runner"], default_out("compare"))
        click.echo(estimate.format_estimate(report))
        try:
            estimate.record_estimates([file.stem], report)
        except history.HistoryError as error:
            failure = "; ".join(filter(None, (failure, str(error))))
    click.echo(judge.verdict_sentence(record))
    if failure:  # after the verdict is shown: the run is over and only keeping it failed
        raise click.ClickException(f"the judge finished, but {failure}")
    sys.exit(0 if record["verdict"] in ("ranked", "passed the tests") else 1)


@cli.group(name="remote")
def remote_group():
    """What the KernelBot server holds: our submissions, and the public ranking."""


def ask_popcorn(args: list[str]) -> tuple[str, Path]:
    try:
        return leaderboard.ask_popcorn(args)
    except leaderboard.PreflightError as error:
        raise click.ClickException(str(error)) from None
    except leaderboard.Interrupted as stop:
        click.echo(f"interrupted ({stop.signal_name}); popcorn's output so far is saved in {stop.saved}", err=True)
        sys.exit(stop.exit_code)


def merge_answer(entries: list[dict], saved: Path) -> int:
    try:
        return leaderboard.merge_answer(entries, saved)
    except history.HistoryError as error:
        raise click.ClickException(str(error)) from None


@remote_group.command(name="list")
def remote_list():
    """Our submissions to causal_conv1d (popcorn-cli submissions list), merged into the history."""
    text, saved = ask_popcorn(["submissions", "list", "--leaderboard", leaderboard.LEADERBOARD])
    try:
        rows = remote.parse_list(text, warn=lambda msg: click.echo(f"warning: {msg}", err=True))
    except ValueError as error:
        raise click.ClickException(f"{error}; popcorn's answer is saved in {saved}") from None
    added = merge_answer([history.listed_entry(row) for row in rows], saved)
    click.echo(f"{'id':>8}  {'file':<20}{'time':<21}{'gpu':<13}{'status':<9}{'score':>10}")
    for row in rows:
        click.echo(f"{row['submission_id']:>8}  {row['file_name'][:19]:<20}{row['time']:<21}{str(row['gpu']):<13}"
                   f"{row['status']:<9}{row['score_text']:>10}")
    click.echo(f"{len(rows)} submissions; {added} new in the history")


class SubmissionId(click.ParamType):
    """A submission id: a positive integer (a leading '-' is read as a bad id, not as an option)."""
    name = "ID"

    def convert(self, value, param, ctx):
        number = remote.decimal_id(value)
        if number is None or number < 1:
            self.fail(f"{harness.shown(str(value))} is not a submission id: an id is a positive integer", param, ctx)
        return number


@remote_group.command(name="show", context_settings={"ignore_unknown_options": True})
@click.argument("submission_id", type=SubmissionId())
def remote_show(submission_id):
    """One submission's runs (popcorn-cli submissions show ID), merged into the history."""
    text, saved = ask_popcorn(["submissions", "show", str(submission_id), "--no-code"])
    try:
        record = remote.parse_show(text)
    except ValueError as error:
        raise click.ClickException(f"{error}; popcorn's answer is saved in {saved}") from None
    added = merge_answer([history.shown_entry(record)], saved)
    click.echo(f"submission {record['submission_id']}: {record.get('file_name', '?')}, {record.get('status', '?')}")
    for run in record["runs"]:
        score = f"{run['score_us']:.2f} us" if run["score_us"] else run["score_text"]
        click.echo(f"  {run['mode']:<12}{run['runner']:<14}{'passed' if run['passed'] else 'FAILED':<8}"
                   f"{'secret' if run['secret'] else 'public':<8}{score}")
    click.echo(f"{added} new in the history")


@remote_group.command(name="standings")
@click.option("--gpu", default=leaderboard.LEADERBOARD_GPUS[leaderboard.LEADERBOARD][0], show_default=True)
@click.option("--top", default=10, show_default=True, type=click.IntRange(min=1))
def remote_standings(gpu, top):
    """The public ranking beside our best recorded score on that GPU, and the board's deadline."""
    api_url, cli_id = remote.popcorn_settings(os.environ, Path.home())
    if not api_url:
        raise click.ClickException("POPCORN_API_URL is not set: popcorn-cli needs it too (see its setup).")
    try:
        standings = remote.fetch_standings(api_url, leaderboard.LEADERBOARD, gpu, cli_id, limit=max(top, 100))
    except remote.RemoteError as error:
        raise click.ClickException(str(error)) from None
    click.echo(remote.format_standings(standings, history.best_public(read_history(), gpu), top))
    board, said = leaderboard.ask_board(leaderboard.LEADERBOARD)
    if board is not None and remote.deadline_passed(board):
        click.echo(f"deadline: {board['deadline'].strftime('%Y-%m-%d %H:%M UTC')}, passed: this ranking is final"
                   " unless the server reopens the board")
    elif board is not None and board["deadline"] is not None:
        click.echo(f"deadline: {board['deadline'].strftime('%Y-%m-%d %H:%M UTC')}, still open: the ranking can change")
    else:
        click.echo(f"deadline: unknown ({said})")


def read_history() -> list[dict]:
    try:
        return history.read_entries(warn=lambda msg: click.echo(msg, err=True))
    except history.HistoryError as error:
        raise click.ClickException(str(error)) from None


@cli.command(name="history")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path),
              help="draw geomean over time to this picture (.png, .pdf or .svg)")
@click.option("--case", "case_text", metavar="BxDxS[xW]",
              help="instead, one case's mean in every history line that holds its time (W defaults to 4)")
def history_cmd(plot_file, case_text):
    """Every recorded run, newest last, the best per GPU marked; or, with --case, one case across them."""
    label = None
    if case_text is not None:
        if plot_file is not None:
            raise click.ClickException("--plot draws the geomeans, --case prints one case: give one of them")
        try:
            label = harness.case_label(harness.parse_label(case_text, seed=None))
        except ValueError as error:
            raise click.ClickException(f"--case: {error}") from None
    if plot_file is not None:
        if plot_file.suffix.lower() not in history.PLOT_FORMATS:
            raise click.ClickException(f"--plot {plot_file}: the picture's name must end in "
                                       f"{', '.join(history.PLOT_FORMATS)}")
        if not plot_file.parent.is_dir():
            raise click.ClickException(f"--plot {plot_file}: the folder {plot_file.parent} does not exist")
    entries = read_history()
    if not entries:
        found = (f"no readable entry in {history.HISTORY}" if history.HISTORY.exists()
                 else f"no history yet in {history.HISTORY}")
        if plot_file is not None:  # a picture was asked for: not drawing one is a refusal, not a quiet success
            raise click.ClickException(f"--plot {plot_file}: nothing to draw, {found}; no picture written")
        click.echo(found)
        return
    if plot_file is not None:  # refused before anything is printed, so a refusal is the whole output
        if not history.plot_series(entries):
            raise click.ClickException(f"--plot {plot_file}: nothing to draw, {history.HISTORY} holds no passing "
                                       f"geomean of a submission yet; no picture written")
        if importlib.util.find_spec("matplotlib") is None:
            raise click.ClickException("history --plot needs matplotlib: pip install matplotlib")
    if label is not None:
        series = history.case_series(entries, label)
        click.echo(history.format_case_series(series) if series["runs"] or series["unreadable"]
                   else f"no line of {history.HISTORY} holds a time of {label}")
        return
    click.echo(history.format_table(entries))
    click.echo("")
    click.echo(history.by_file(entries))
    if plot_file:
        try:
            history.plot(entries, plot_file)
        except ImportError as error:  # found but broken: one sentence still
            raise click.ClickException(str(error)) from None
        except (OSError, ValueError) as error:
            raise click.ClickException(f"--plot {plot_file} could not be written: {error}") from None
        click.echo(f"wrote {plot_file}")


if __name__ == "__main__":
    cli()
