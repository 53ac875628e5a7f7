"""The runner's whole chain on this machine: the judge for a closed leaderboard.

What the KernelBot runner, as published with the problem, does with one ranked submission: for
each stage, test, then benchmark, then leaderboard, it writes its files and the submission afresh,
runs `python3 submission.py` once (the compile step: 120 s, POPCORN_SEED=1, no Helion flag, a failure
tolerated), then a new `python3 eval.py MODE CASES` process (POPCORN_FD for the results), stopping
at the first stage that fails. The chain runs twice: with the published seeds and with a secret seed.
The rank is the public leaderboard stage's geomean; a failed secret chain hides the entry. Here every
stage runs in its own scratch folder, in its own process, the same way.
"""
import dataclasses
import datetime
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import eval as harness
from scripts import leaderboard
from scripts.times import NOT_A_TIME, number, time_us

STAGES = ("test", "benchmark", "leaderboard")
CASES_OF = {"test": "tests", "benchmark": "benchmarks", "leaderboard": "benchmarks"}
SLACK_S = 60  # beyond a stage's own limit (eval.py enforces that), for the process to start and end


@dataclasses.dataclass
class Stage:
    """One stage of one chain, as data: what ran, in which process, and what eval.py said."""
    chain: str  # "public" or "secret"
    mode: str
    pid: int | None = None
    compile: dict | None = None
    code: int | None = None
    passed: bool = False
    lines: dict = dataclasses.field(default_factory=dict)  # eval.py's key: value results
    error: str = ""
    start_time: str = ""
    end_time: str = ""

    def means_us(self) -> list:
        """The benchmark means eval.py reported, in microseconds; None for one missing or that is no time the
        history's reader takes (0, nan, 1e-300 ns, '1.2.3')."""
        count = self.lines.get("benchmark-count", "0")
        count = int(count) if re.fullmatch(r"[0-9]{1,6}", count) else 0
        means_ns = [number(self.lines.get(f"benchmark.{i}.mean")) for i in range(count)]
        return [time_us(m / 1e3) if m is not None else None for m in means_ns]

    def unreadable_mean(self) -> str | None:
        """Why the benchmark means give no score (none reported, or one that is no time), or None."""
        means = self.means_us()
        if not means:
            return "eval.py reported no benchmark mean"
        bad = next((i for i, m in enumerate(means) if m is None), None)
        if bad is None:
            return None
        raw = self.lines.get(f"benchmark.{bad}.mean")
        what = "is missing" if raw is None else f"({harness.shown(raw)} ns) is {NOT_A_TIME}"
        return f"eval.py's benchmark {bad} mean {what}, so there is no score"

    def score_s(self) -> float | None:
        """The geomean of the benchmark means, in seconds (the leaderboard stage's score)."""
        means = self.means_us()  # read once: unreadable_mean says why, this only needs whether
        if not self.passed or not means or None in means:
            return None
        return harness.geomean([m / 1e6 for m in means])


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def parse_results(text: str) -> dict:
    """eval.py's `key: value` lines -> {key: value}."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            found[key.strip()] = value.strip()
    return found


def cases_file(mode: str, folder: Path) -> Path:
    """task.yml's cases for the stage, as the runner's tests file."""
    path = folder / f"{CASES_OF[mode]}.txt"
    path.write_text("\n".join(case.spec for case in harness.cases_from_task(CASES_OF[mode])) + "\n")
    return path


def clean_env(secret: int | None) -> dict:
    """The stage's environment: no interpreter flag or results descriptor of ours leaks in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("POPCORN_FD", "POPCORN_SEED", "TRITON_INTERPRET", "HELION_INTERPRET")}
    if secret is not None:
        env["POPCORN_SEED"] = str(secret)
    return env


def end_group(process: subprocess.Popen, grace_s: float = 10) -> None:
    """SIGTERM to the process's group (eval.py then ends its worker), SIGKILL to what is left after grace_s."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait_s)
            os.killpg(process.pid, 0)  # the group outlives its leader only while a worker lingers
        except ProcessLookupError:
            break
        except subprocess.TimeoutExpired:
            continue


def run_stage(file: Path, mode: str, chain: str, secret: int | None, problem_dir: Path, echo=print) -> Stage:
    """Compile step, then `python3 eval.py MODE CASES` with POPCORN_FD, each in a fresh scratch folder."""
    stage = Stage(chain=chain, mode=mode, start_time=now())
    try:
        output = _run_stage_in(stage, file, secret, problem_dir, echo)
    except KeyboardInterrupt as interrupt:  # the stage's finished cases (eval.py writes each as it ends) are kept
        stop = harness.interrupted_of(interrupt)
        stage.end_time, stage.error = now(), f"interrupted ({stop.name})"
        raise harness.Cut(stop.signum, stage) from None
    stage.end_time = now()
    settle(stage, output)
    return stage


def settle(stage: Stage, output: bytes) -> None:
    """Whether the finished stage passed, and if not, why: eval.py's check line and exit code, then, for a
    leaderboard stage, means that give a score (a mean that is no time fails the stage loudly, never ranks)."""
    stage.passed = stage.lines.get("check") == "pass" and stage.code in (0, harness.FAILED) and not stage.error
    unscored = stage.passed and stage.mode == "leaderboard" and stage.unreadable_mean()
    if unscored:
        stage.passed, stage.error = False, unscored
    if not stage.passed and not stage.error:
        failures = [v for k, v in stage.lines.items() if k.endswith(".error")]
        tail = output.decode("utf-8", "replace").strip().splitlines()
        stage.error = (failures[0] if failures else
                       f"eval.py exited {stage.code} with no check line ({tail[-1] if tail else 'no output'})")


def _run_stage_in(stage: Stage, file: Path, secret: int | None, problem_dir: Path, echo) -> bytes:
    """run_stage's work in a scratch folder: fills in the stage's compile step, pid, exit code and eval.py's
    lines (those too when a signal ends it); eval.py's own output."""
    chain, mode = stage.chain, stage.mode
    limit = harness.time_limits()[mode]
    with tempfile.TemporaryDirectory(prefix=f"judge-{chain}-{mode}-") as scratch:
        folder = Path(scratch)
        echo(f"[{chain}] {mode}: compile step (`python3 submission.py`, {leaderboard.COMPILE_LIMIT_S} s)")
        stage.compile = leaderboard.run_compile_step(file, problem_dir, folder)
        if stage.compile["timed_out"] or stage.compile["code"] != 0:
            echo(f"[{chain}] {mode}:   the compile step failed (exit {stage.compile['code']}: {stage.compile['tail']});"
                 " the runner goes on regardless")
        tests = cases_file(mode, folder)
        results = folder / "results.txt"
        with open(results, "w") as out:
            echo(f"[{chain}] {mode}: `python3 eval.py {mode} {tests.name}` in a fresh process"
                 f"{' (secret seed)' if secret is not None else ''}")
            env = clean_env(secret)
            env["POPCORN_FD"] = str(out.fileno())
            # Its own process group, so that eval.py and its worker end together, whatever ends the judge.
            process = subprocess.Popen([sys.executable, "eval.py", mode, tests.name], cwd=folder, env=env,
                                       pass_fds=(out.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            stage.pid = process.pid
            try:
                output, _ = process.communicate(timeout=limit + SLACK_S)
            except subprocess.TimeoutExpired:
                end_group(process)
                output, _ = process.communicate()
                stage.error = f"the {mode} stage ran past its {limit} s limit"
            except BaseException:  # Ctrl-C or SIGTERM: no eval.py keeps running in a deleted folder
                end_group(process)
                stage.lines = parse_results(results.read_text(errors="replace"))
                raise
            stage.code = process.returncode
        stage.lines = parse_results(results.read_text(errors="replace"))
    return output


def run_chain(file: Path, chain: str, secret: int | None, problem_dir: Path, on_gpu: bool, echo=print) -> list[Stage]:
    """test, benchmark, leaderboard in turn, stopping at the first that fails (without a GPU: test only)."""
    stages = []
    for mode in STAGES if on_gpu else STAGES[:1]:
        try:
            stages.append(run_stage(file, mode, chain, secret, problem_dir, echo))
            echo(f"[{chain}] {mode}: {'passed' if stages[-1].passed else 'FAILED: ' + stages[-1].error}")
        except KeyboardInterrupt as interrupt:  # a Cut from run_stage, or a signal between stages
            stop = harness.interrupted_of(interrupt)
            raise harness.Cut(stop.signum, stages + ([stop.kept] if isinstance(stop, harness.Cut) else [])) from None
        if not stages[-1].passed:
            break
    return stages


def steps(file: Path, on_gpu: bool) -> list[str]:
    """What judge runs, in order, for --dry-run."""
    listed = []
    for chain in ("public", "secret"):
        for mode in STAGES if on_gpu else STAGES[:1]:
            seed = "" if chain == "public" else "POPCORN_SEED=<random> "
            listed.append(f"[{chain}] {mode}: fresh folder with the runner's files and {file.name} as submission.py;"
                          f" POPCORN_SEED=1 python3 submission.py (120 s); {seed}POPCORN_FD=N python3 eval.py {mode}"
                          f" {CASES_OF[mode]}.txt")
    if not on_gpu:
        listed.append("benchmark and leaderboard stages: not here (no CUDA GPU)")
    return listed


def judge(file: Path, problem_dir: Path, secret: int | None = None, echo=print) -> dict:
    """Both chains on this machine: the judge's record (runs in popcorn's shape, scores, verdict)."""
    on_gpu = harness.gpu_available()
    runner = harness.device_name()
    secret = secret if secret is not None else random.SystemRandom().randrange(1, 2 ** 31)
    chains = {}
    try:
        for chain, seed in (("public", None), ("secret", secret)):
            chains[chain] = run_chain(file, chain, seed, problem_dir, on_gpu, echo)
    except KeyboardInterrupt as interrupt:  # a Cut from run_chain, or a signal between the chains
        stop = harness.interrupted_of(interrupt)
        if isinstance(stop, harness.Cut) and stop.kept:
            chains[stop.kept[-1].chain] = stop.kept
        if not any(finished_cases(s) for ss in chains.values() for s in ss):
            raise harness.Interrupted(stop.signum) from None  # nothing finished: nothing to keep
        raise harness.Cut(stop.signum, _record(file, runner, on_gpu, secret, chains, interrupted=stop.name)) from None
    return _record(file, runner, on_gpu, secret, chains)


def finished_cases(stage: Stage) -> int:
    """How many case results eval.py reported in the stage (a status line, or a timed case's mean); a case
    failed without running (its import failed) is a result too, one not run for lack of time is not."""
    return sum(1 for key in stage.lines if re.fullmatch(r"(test|benchmark)\.\d+\.(status|mean)", key)
               and not stage.lines.get(key.rsplit(".", 1)[0] + ".error", "").startswith("not run"))


def _record(file: Path, runner: str, on_gpu: bool, secret: int, chains: dict, interrupted: str | None = None) -> dict:
    """The judge's record of the chains that ran. Where a signal ended it, the verdict is "interrupted": the
    public score stays where the public chain finished, and nothing is said hidden."""
    chains = {"public": chains.get("public", []), "secret": chains.get("secret", [])}
    runs = [{"mode": s.mode, "secret": s.chain == "secret", "runner": runner,
             "score": s.score_s() if s.mode == "leaderboard" else None, "passed": s.passed,
             "start_time": s.start_time, "end_time": s.end_time} for ss in chains.values() for s in ss]
    public, hidden_by = _score(chains["public"]), None
    if on_gpu and public is not None and not interrupted and not all(s.passed for s in chains["secret"]):
        hidden_by = next(s for s in chains["secret"] if not s.passed)
    verdict = ("interrupted" if interrupted else
               "ranked" if public is not None and hidden_by is None and on_gpu else
               "hidden" if hidden_by is not None else
               "passed the tests" if not on_gpu and all(s.passed for ss in chains.values() for s in ss) else "failed")
    return {"file": str(file), "runner": runner, "on_gpu": on_gpu, "secret_seed": secret, "verdict": verdict,
            "public_s": public, "secret_s": _score(chains["secret"]), "runs": runs,
            "stages": [dataclasses.asdict(s) for ss in chains.values() for s in ss],
            "hidden_by": f"the secret {hidden_by.mode} stage: {hidden_by.error}" if hidden_by else None,
            "interrupted": interrupted}


def _score(stages: list[Stage]) -> float | None:
    ranked = [s for s in stages if s.mode == "leaderboard" and s.passed]
    return ranked[0].score_s() if ranked else None


def popcorn_text(record: dict) -> str:
    """What popcorn prints for a ranked run, from the judge's record: score lines, a blank line, the JSON."""
    lines = []
    for label, key in (("public", "public_s"), ("secret", "secret_s")):
        if record[key] is not None:
            lines.append(f"Geomean score ({label}) on {record['runner']}: {record[key]:.4e} s")
    summary = {"submission_id": None, "leaderboard": leaderboard.LEADERBOARD, "file_name": Path(record["file"]).name,
               "done": True, "runs": record["runs"]}
    return "\n".join(lines + ["", json.dumps(summary, indent=2)])


def verdict_sentence(record: dict) -> str:
    if record["verdict"] == "ranked":
        return (f"judged locally on {record['runner']}: ranked, public {record['public_s'] * 1e6:.2f} us"
                f" (secret {record['secret_s'] * 1e6:.2f} us, seed {record['secret_seed']}); the B200 scores differ")
    if record["verdict"] == "hidden":
        return (f"judged locally on {record['runner']}: the public chain passed ({record['public_s'] * 1e6:.2f} us) but"
                f" {record['hidden_by']}, so the entry would be hidden")
    if record["verdict"] == "interrupted":
        last = record["stages"][-1]
        done = sum(finished_cases(Stage(**stage)) for stage in record["stages"])
        where = "in" if last["error"].startswith("interrupted") else "after"
        return (f"judged locally on {record['runner']}: interrupted ({record['interrupted']}) {where} the"
                f" {last['chain']} {last['mode']} stage, after {done} case result{'s' if done != 1 else ''}, so"
                f" there is no verdict")
    if record["verdict"] == "passed the tests":
        return ("the compile steps and the test stages passed in both chains; the benchmark and leaderboard stages"
                " time kernels on a CUDA GPU, and none is visible here, so there is no score")
    failed = next((s for s in record["stages"] if not s["passed"]), None)
    where = f"the {failed['chain']} {failed['mode']} stage failed: {failed['error']}" if failed else "no stage passed"
    return f"judged locally on {record['runner']}: {where}, so the runner would give no score"
