"""The leaderboard loop from one command: test, bench, compare, tune, submit, history.

    python scripts/cli.py --help

Each command is a thin layer over plain functions in scripts/ and eval.py, which the tests call directly.
"""
import datetime
import io
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import eval as harness  # noqa: E402
from scripts import history, leaderboard  # noqa: E402

SUBMISSION = ROOT / "submission.py"


def correctness_suite(path: Path) -> tuple[bool, str]:
    """The task's tests on this machine (the GPU if there is one, else the interpreter): (ok, failures)."""
    out = io.StringIO()
    reporter = harness.HumanReporter(stream=out)
    cases = harness.cases_from_task(ROOT, "tests")
    passed = harness.run_suite("test", cases, Path(path), ROOT, reporter)
    failures = [f"{c['spec']}: {c['error']}" for c in reporter.runs[-1]["cases"] if not c["ok"]]
    return passed, "; ".join(failures)


def require_gpu(what: str) -> None:
    if not harness.gpu_available():
        raise click.ClickException(f"{what} times kernels on the GPU, and no CUDA GPU is visible here.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli():
    """The causal_conv1d leaderboard loop."""


@cli.command()
@click.option("--submission", type=click.Path(exists=True, dir_okay=False), help="file to test instead of submission.py")
def test(submission):
    """Run the task's tests (eval.py test)."""
    args = ["test"] + (["--submission", submission] if submission else [])
    sys.exit(harness.local_main(args))


@cli.command()
@click.option("--submission", type=click.Path(exists=True, dir_okay=False), help="file to time instead of submission.py")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="also write the report here")
def bench(submission, json_out):
    """Run the task's benchmarks under the leaderboard's timing (eval.py benchmark)."""
    args = ["benchmark"] + (["--submission", submission] if submission else []) + (["--json", json_out] if json_out else [])
    sys.exit(harness.local_main(args))


@cli.command()
@click.argument("variants", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--submission", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=SUBMISSION,
              show_default=True)
@click.option("--shapes", multiple=True, help="more cases beyond the leaderboard's: BxDxS[xW], or 'large', 'small'")
@click.option("--rounds", default=3, show_default=True, help="interleaved rounds; the median round is kept")
@click.option("--rep-ms", default=100.0, show_default=True, help="timing window per measurement (the runner's is 100)")
@click.option("--no-reference", is_flag=True, help="skip the slow cuDNN reference")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), help="default results/<gpu>/")
def compare(variants, submission, shapes, rounds, rep_ms, no_reference, out_dir):
    """Time the submission beside the reference, copies of x, torch.compile, Dao's kernel and VARIANTS."""
    require_gpu("compare")
    from scripts import compare as cmp

    cases = cmp.resolve_cases(list(shapes))
    impls = cmp.build_impls(submission, list(variants), reference_too=not no_reference)
    with click.progressbar(length=rounds * len(cases) * len(impls), label="timing", show_eta=True) as bar:
        raw = cmp.run_compare(impls, cases, rounds, rep_ms, progress=bar.update)
    summary = cmp.summarize(raw, cases)
    device = harness.device_name()
    out_dir = out_dir or ROOT / "results" / device.lower().replace(" ", "-")
    commit = history.git_commit()
    path = cmp.write_results(summary, cases, device, commit, datetime.date.today().isoformat(), out_dir)
    files = {"submission": submission, **{path.stem: path for path in variants}}
    for name, entry in summary.items():
        history.append_entry(history.make_entry(
            source="compare", mode=name, gpu=device, file=files.get(name, ROOT / "scripts" / "baselines.py"),
            per_case_us=entry["per_case_us"], geomean_us=entry["geomean_us"],
            outcome="fail" if entry.get("errors") else "pass", vs_copy=entry["vs_copy"]))
    click.echo(cmp.format_table(summary, cases))
    click.echo(f"wrote {path}")


@cli.command()
@click.option("--shapes", multiple=True, help="more cases beyond the leaderboard's: BxDxS[xW], or 'large', 'small'")
@click.option("--rounds", default=2, show_default=True)
@click.option("--rep-ms", default=50.0, show_default=True)
@click.option("--dry-run", is_flag=True, help="show the new table and diff, write nothing")
def tune(shapes, rounds, rep_ms, dry_run):
    """Sweep (BLOCK, num_warps) per shape on this GPU and write the winners into submission.py."""
    require_gpu("tune")
    from scripts import baselines, compare as cmp, tune as tuner

    module = baselines.load_kernel_file(SUBMISSION, "submission")
    gpu = module._gpu_key(0)
    cases = cmp.resolve_cases(list(shapes))
    total = rounds * len(cases) * len(tuner.SEARCH_SPACE)
    with click.progressbar(length=total, label=f"tuning on {gpu}", show_eta=True) as bar:
        results = tuner.sweep(module, gpu, cases, tuner.SEARCH_SPACE, rep_ms, rounds, progress=bar.update)
    best = tuner.best_configs(results)
    for shape, timings in results.items():
        ranked = sorted(timings.items(), key=lambda kv: kv[1])
        click.echo(f"{shape}: " + ", ".join(f"{cfg}={us:.2f}us" for cfg, us in ranked[:5]))
    old = SUBMISSION.read_text()
    new = tuner.rewrite_configs(old, gpu, best)
    click.echo(tuner.diff(old, new) or "the table already holds the best configs")
    if dry_run or new == old:
        return
    ok, message = tuner.apply_safely(SUBMISSION, new, correctness_suite)
    if not ok:
        raise click.ClickException(f"the tuned file failed the correctness suite, so the old one was restored: {message}")
    click.echo("submission.py updated; the correctness suite passes")


@cli.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path), default=SUBMISSION)
@click.option("--mode", type=click.Choice(leaderboard.MODES), default="test", show_default=True)
@click.option("--gpu", help="override the file's '#!POPCORN gpu'")
@click.option("--leaderboard", "board", help="override the file's '#!POPCORN leaderboard'")
@click.option("--yes", is_flag=True, help="do not ask before a ranked (leaderboard) submission")
@click.option("--dry-run", is_flag=True, help="run the preflight and print the popcorn command only")
def submit(file, mode, gpu, board, yes, dry_run):
    """Preflight FILE (default submission.py), then submit it through popcorn-cli."""
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
    code, text = leaderboard.stream_command(command, echo=click.echo)
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
