"""The leaderboard loop from one command: test, bench, compare, tune, helion-tune, profile, submit, history.

    python scripts/cli.py --help        (or: python -m scripts --help)

Each command is a thin layer over plain functions in scripts/ and eval.py, which the tests call
directly. Flags mean the same everywhere: FILE is the submission-style file (default submission.py),
--json FILE writes one report, --out DIR a folder of results, --dry-run changes nothing.
"""
import datetime
import io
import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python scripts/cli.py`: the workspace root, not scripts/, leads the path
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import click

import eval as harness
from scripts import HELION_SUBMISSION, ROOT, SUBMISSION, history, leaderboard

ROUNDS = 2  # interleaved rounds for compare and tune: the median (compare) or best (tune) is kept
FILE = click.argument("file", required=False, default=SUBMISSION,
                      type=click.Path(exists=True, dir_okay=False, path_type=Path))


def correctness_suite(path: Path) -> tuple[bool, str]:
    """The task's tests on this machine (the GPU if there is one, else the interpreter): (ok, failures)."""
    reporter = harness.HumanReporter(out=io.StringIO())
    passed = harness.run_suite("test", harness.cases_from_task("tests"), Path(path), reporter)
    failures = [f"{c['spec']}: {c['error']}" for c in reporter.runs[-1]["cases"] if not c["ok"]]
    return passed, "; ".join(failures)


def require_gpu(what: str) -> None:
    if not harness.gpu_available():
        raise click.ClickException(f"{what} times kernels on the GPU, and no CUDA GPU is visible here.")


def default_out(kind: str) -> Path:
    """results/runs/KIND/GPU: ignored by git, so a local run leaves the tree as it was."""
    return ROOT / "results" / "runs" / kind / harness.device_name().lower().replace(" ", "-")


def run_eval(mode: str, file: Path, tests_file, json_out, timeout) -> None:
    try:
        report = harness.run_local(mode, file.resolve(), tests_file, timeout)
    except harness.TaskError as error:
        raise click.ClickException(str(error)) from None
    if json_out:
        json_out.write_text(json.dumps(report, indent=2))
    history.record_report(report)
    sys.exit(0 if report["passed"] else 1)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """The causal_conv1d leaderboard loop."""


TESTS_FILE = click.option("--tests-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                          help="cases in the runner's format instead of task.yml's")
JSON = click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the report here")
TIMEOUT = click.option("--timeout", type=float, help="seconds the run may take (default: task.yml's)")


@cli.command()
@FILE
@TESTS_FILE
@JSON
@TIMEOUT
def test(file, tests_file, json_out, timeout):
    """Run the task's tests on FILE (eval.py test)."""
    run_eval("test", file, tests_file, json_out, timeout)


@cli.command()
@FILE
@TESTS_FILE
@JSON
@TIMEOUT
def bench(file, tests_file, json_out, timeout):
    """Time FILE on the task's benchmarks under the leaderboard's timing (eval.py benchmark)."""
    run_eval("benchmark", file, tests_file, json_out, timeout)


@cli.command()
@FILE
@click.option("--variant", "variants", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="another submission-style file to time beside FILE (repeatable)")
@click.option("--shapes", multiple=True, help="more cases beyond the leaderboard's: BxDxS[xW], or 'large', 'small'")
@click.option("--rounds", default=ROUNDS, show_default=True, help="interleaved rounds; the median round is kept")
@click.option("--rep-ms", default=float(harness.REP_MS["benchmark"]), show_default=True,
              help="timing window per measurement (the runner's)")
@click.option("--no-reference", is_flag=True, help="skip the slow cuDNN reference")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="folder for compare.json and compare.png [default: results/runs/compare/GPU]")
def compare(file, variants, shapes, rounds, rep_ms, no_reference, out_dir):
    """Time FILE beside the copies of x, the reference, torch.compile, Dao's kernel and the variants."""
    require_gpu("compare")
    from scripts import compare as cmp

    cases = cmp.resolve_cases(list(shapes))
    impls = cmp.build_impls(file, list(variants), reference_too=not no_reference)
    with click.progressbar(length=rounds * len(cases) * len(impls), label="timing", show_eta=True) as bar:
        raw = cmp.run_compare(impls, cases, rounds, rep_ms, progress=bar.update)
    summary = cmp.summarize(raw, cases)
    device = harness.device_name()
    path = cmp.write_results(summary, cases, device, history.git_commit(), datetime.date.today().isoformat(),
                             out_dir or default_out("compare"))
    files = {"submission": file, **{path.stem: path for path in variants}}
    for name, entry in summary.items():
        if name in files:
            history.append_entry(history.make_entry(
                source="compare", mode=name, gpu=device, file=files[name], per_case_us=entry["per_case_us"],
                geomean_us=entry["geomean_us"], outcome="fail" if entry.get("errors") else "pass",
                vs_copy=entry["vs_copy"], vs_floor=entry["vs_floor"]))
    click.echo(cmp.format_table(summary, cases))
    click.echo(f"wrote {path}")


@cli.command()
@click.option("--shapes", multiple=True, help="more cases beyond the leaderboard's: BxDxS[xW], or 'large', 'small'")
@click.option("--rounds", default=ROUNDS, show_default=True, help="rounds over the space; the best time is kept")
@click.option("--rep-ms", default=50.0, show_default=True)
@click.option("--dry-run", is_flag=True, help="show the new table and its diff, write nothing")
def tune(shapes, rounds, rep_ms, dry_run):
    """Sweep (BLOCK, num_warps) per shape on this GPU and write the winners that beat the heuristic."""
    require_gpu("tune")
    from scripts import baselines, compare as cmp, configs, tune as tuner

    module = baselines.load_kernel_file(SUBMISSION, "submission")
    gpu = module._gpu_key(0)
    cases = cmp.resolve_cases(list(shapes))
    with click.progressbar(length=rounds * len(cases) * len(tuner.SEARCH_SPACE), label=f"tuning on {gpu}") as bar:
        results = tuner.sweep(module, gpu, cases, tuner.SEARCH_SPACE, rep_ms, rounds, progress=bar.update)
    best = tuner.best_configs(results)
    for shape, timings in results.items():
        ranked = sorted(timings.items(), key=lambda kv: kv[1])
        click.echo(f"{shape}: " + ", ".join(f"{cfg}={us:.2f}us" for cfg, us in ranked[:5]))
    old = SUBMISSION.read_text()
    new = tuner.rewrite(old, module, gpu, best)
    click.echo(configs.diff(old, new, SUBMISSION.name) or "the table already holds the best configs")
    if dry_run or new == old:
        return
    ok, message = tuner.apply_safely(SUBMISSION, new, correctness_suite)
    if not ok:
        raise click.ClickException(f"the tuned file failed the correctness suite, so the old one was restored: {message}")
    click.echo("submission.py updated; the correctness suite passes")


@cli.command(name="helion-tune")
@click.option("--effort", default="quick", show_default=True, type=click.Choice(("quick", "full")))
@click.option("--timing", default="runner", show_default=True, type=click.Choice(("runner", "helion")),
              help="what ranks configs: the leaderboard's timing, or Helion's do_bench")
@click.option("--tests", "with_tests", is_flag=True, help="also tune the test shapes")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="folder for configs.json and Helion's search logs [default: results/helion/search]")
@click.option("--dry-run", is_flag=True, help="search, but leave submissions/submission_helion.py as it is")
def helion_tune(effort, timing, with_tests, out_dir, dry_run):
    """Helion's autotuner on every task shape; its picks hard-coded into the Helion submission."""
    require_gpu("helion-tune")
    from scripts import helion_autotune

    shapes = [c.args for c in harness.cases_from_task("benchmarks")]
    if with_tests:
        shapes += [c.args for c in harness.cases_from_task("tests")]
    helion_autotune.autotune(shapes, effort, timing, out_dir or ROOT / "results" / "helion" / "search",
                             write=not dry_run, echo=click.echo)
    if not dry_run:
        click.echo(f"{HELION_SUBMISSION.relative_to(ROOT)} updated")


@cli.command()
@FILE
@click.option("--case", "case_index", default=0, show_default=True, help="which leaderboard case (0-based)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="folder for ncu's raw CSV and the table [default: results/runs/profile/GPU]")
def profile(file, case_index, out_dir):
    """Nsight Compute on one leaderboard case: FILE beside the fastest copy of x, side by side."""
    from scripts import ncu_profile as prof

    cases = harness.cases_from_task("benchmarks")
    if not 0 <= case_index < len(cases):
        raise click.ClickException(f"--case must be 0 to {len(cases) - 1}: there are {len(cases)} leaderboard cases")
    problem = prof.unavailable()
    if problem:
        raise click.ClickException(problem)
    out_dir = out_dir or default_out("profile")
    table = prof.profile_side_by_side(file, cases[case_index].args, out_dir, echo=click.echo)
    click.echo(table)
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
@click.option("--dry-run", is_flag=True, help="run the preflight and print the popcorn command only")
def submit(file, mode, gpu, board, yes, dry_run):
    """Preflight FILE, then submit it through popcorn-cli."""
    try:
        checked = leaderboard.preflight(file, board, gpu, correctness_suite)
    except leaderboard.PreflightError as error:
        raise click.ClickException(f"preflight refused {file.name}: {error}") from None
    for note in checked["notes"]:
        click.echo(f"note: {note}")
    for warning in checked["warnings"]:
        click.echo(f"warning: looks like caching across calls, {warning}")
    popcorn = leaderboard.find_popcorn()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    output = ROOT / "results" / "remote" / f"{stamp}.txt"
    command = leaderboard.popcorn_command(popcorn or "popcorn-cli", checked["leaderboard"], checked["gpu"],
                                          mode, file, output)
    if dry_run:
        click.echo(" ".join(command))
        return
    if popcorn is None:
        raise click.ClickException(leaderboard.INSTALL_HINT)
    if mode == "leaderboard" and not yes:
        click.confirm(f"Submit {file.name} for a ranked run on {checked['gpu']}?", abort=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    code, text = leaderboard.run_echoing(command, echo=click.echo)
    means = leaderboard.parse_means_us(text + (output.read_text() if output.exists() else ""))
    geo = harness.geomean(means.values()) if means and mode != "test" else None
    history.append_entry(history.make_entry(
        source="popcorn", mode=mode, gpu=checked["gpu"], file=file, per_case_us={str(k): v for k, v in means.items()},
        geomean_us=geo, outcome="pass" if code == 0 else "fail", output=str(output)))
    if code != 0:
        raise click.ClickException(f"popcorn exited with {code}; its output is in {output}")


@cli.command(name="history")
@click.option("--plot", "plot_file", type=click.Path(dir_okay=False, path_type=Path), help="draw geomean over time to this PNG")
def history_cmd(plot_file):
    """Every recorded run, newest last, the best per GPU marked."""
    entries = history.read_entries(warn=lambda msg: click.echo(msg, err=True))
    if not entries:
        click.echo(f"no history yet in {history.HISTORY}")
        return
    click.echo(history.format_table(entries))
    if plot_file:
        try:
            history.plot(entries, plot_file)
        except ImportError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"wrote {plot_file}")


if __name__ == "__main__":
    cli()
