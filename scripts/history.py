"""results/history.jsonl: one line per local benchmark, comparison or submission, newest last.

The file is user data: git ignores it, so a local run leaves the tree clean. Measurements worth
keeping go into results/ summaries by hand.
"""
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import eval as harness
from scripts import ROOT, remote
from scripts.times import NOT_A_TIME, time_us, utc_time

RESULTS = ROOT / "results"
HISTORY = harness.HISTORY  # eval.py holds the path (WORKSPACE_HISTORY, else results/history.jsonl)


def remote_folder(history: Path) -> Path:
    """The folder popcorn's raw answers go to: results/remote/ (user data git ignores), or beside a history that
    lies outside the workspace; never into the tree beside an in-tree history (an empty WORKSPACE_HISTORY, the
    folder '.', put them in ./remote)."""
    beside = history.parent.resolve() / "remote"
    return beside if history.name and not beside.is_relative_to(ROOT) else RESULTS / "remote"


REMOTE = remote_folder(HISTORY)
LOCK_WAIT_S = 10.0
NUMBER = (int, float)
# field -> the types a readable entry may hold there (None: the field may be absent or null)
FIELDS = {"time": (str,), "gpu": (str,), "geomean_us": NUMBER + (type(None),), "outcome": (str,),
          "source": (str, type(None)), "mode": (str, type(None)), "file": (str, type(None)),
          "commit": (str, type(None)), "kind": (str,), "file_hash": (str, type(None)),
          "submission_id": (int, type(None))}
REQUIRED = ("time", "gpu", "outcome")


def git_commit(root: Path = ROOT) -> str:
    """The short commit of the workspace, with '+dirty' where a tracked file differs from it (uncommitted
    edits, or a tree carried beside an older .git: run37's device answered the commit before its tree's).
    WORKSPACE_COMMIT names it where the tree travels without .git or beside a stale one; where it names the
    commit git itself has checked out, git still says whether the tree differs (run55 set it, on the device,
    from the device's stale git, and the record named a commit the tree was not)."""
    state = git_state(root)
    named = os.environ.get("WORKSPACE_COMMIT")
    if named:
        bare = named.removesuffix("+dirty")
        same = state is not None and len(bare) >= 7 and (bare.startswith(state[0]) or state[0].startswith(bare))
        return named + ("+dirty" if same and state[1] and not named.endswith("+dirty") else "")
    if state is None:
        return "unknown"
    return state[0] + ("+dirty" if state[1] else "")


def git_state(root: Path) -> tuple[str, bool] | None:
    """(git's short HEAD, whether a tracked file differs from it), or None where git cannot say."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        if not head.stdout.strip():
            return None
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True)
        return head.stdout.strip(), bool(status.returncode or status.stdout.strip())
    except OSError:
        return None


def file_hash(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def workspace_path(path) -> str:
    """The path relative to the workspace where it lies inside it: the same file reads the same on every machine."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def make_entry(*, source: str, mode: str, kind: str, gpu: str, file, timed_cases: list, geomean_us,
               outcome: str, **extra) -> dict:
    """A local measurement of one of our files: kind is the registry's (submission or variant); timed_cases
    holds each case's fields (eval.case_fields) with its mean_us."""
    entry = {"time": now(), "commit": git_commit(), "file": workspace_path(file),
             "file_hash": file_hash(file) if Path(file).is_file() else None, "gpu": gpu, "kind": kind,
             "source": source, "mode": mode, "timed_cases": timed_cases, "geomean_us": geomean_us,
             "outcome": outcome}
    entry.update(extra)
    return entry


def eval_entry(run: dict, submission, device: str) -> dict:
    """A timed eval.py run (a run record of eval.run_suite)."""
    timed = [{**c["fields"], "mean_us": c["stats_ns"]["mean"] / 1e3} for c in run["cases"] if "stats_ns" in c]
    return make_entry(source="eval", mode=run["mode"], kind="submission", gpu=device, file=submission,
                      timed_cases=timed, geomean_us=run.get("geomean_us"),
                      outcome="interrupted" if run.get("interrupted") else "pass" if run["passed"] else "fail")


def record_report(report: dict) -> int:
    """Each timed run of an eval.py report (eval.run_local's dict) as one history line; how many were appended."""
    timed = [run for run in report["runs"] if run["mode"] != "test"]
    for run in timed:
        append_entry(eval_entry(run, report["submission"], report["device"]))
    return len(timed)


def compare_entry(name: str, kind: str, file, summary: dict, cases: list[dict], device: str) -> dict:
    """One of our files' row of a compare run (compare.summarize's entry for it, over these cases' args)."""
    timed = [{**harness.case_fields(args), "mean_us": summary["per_case_us"].get(harness.case_label(args))}
             for args in cases]
    return make_entry(source="compare", mode=name, kind=kind, gpu=device, file=file, timed_cases=timed,
                      geomean_us=summary["geomean_us"],
                      outcome="fail" if summary.get("errors") else "pass",
                      vs_copy=summary["vs_copy"], vs_floor=summary["vs_floor"])


def estimate_entry(fields: dict) -> dict:
    """A B200 estimate of one row (estimate.history_fields): kind 'estimate', no geomean, so never a score nor ranked."""
    return {"time": now(), "kind": "estimate", "source": "estimate", "geomean_us": None,
            "outcome": f"estimate {fields['low_us']:.2f}-{fields['high_us']:.2f} us B200", **fields}


def _fields_of(text: str) -> dict | None:
    """An older entry's case key, the runner's line ('B: 1; D: 1536; ...') or compare's BxDxS[/WN]: its
    fields, the timed seed unknown (those lines did not record it)."""
    try:
        args = harness.parse_tests(text)[0].args
    except harness.TaskError:
        shape, _, width = text.partition("/W")
        try:
            args = harness.parse_label(shape + (f"x{width}" if width else ""), seed=None)
        except ValueError:
            return None
    return {**harness.case_fields(args), "timed_seed": None}


def case_label_of(text: str) -> str | None:
    """The case label (BxDxSxW) of a case written in any form this workspace has recorded, or None."""
    fields = _fields_of(str(text))
    return harness.case_label(fields) if fields is not None else None


def case_times(entry: dict) -> list[dict]:
    """Each timed case of an entry as its fields with mean_us, whichever form it was written in: timed_cases
    (now), per_case_us keyed by a string (older lines), or the server's per-case rows (remote entries)."""
    if isinstance(entry.get("timed_cases"), list):
        return [dict(c) for c in entry["timed_cases"] if isinstance(c, dict)]
    keyed = dict(entry["per_case_us"]) if isinstance(entry.get("per_case_us"), dict) else {}
    keyed.update({c["spec"]: c["mean_us"] for c in entry.get("cases") or []
                  if isinstance(c, dict) and isinstance(c.get("spec"), str) and "mean_us" in c})
    times = []
    for text, us in keyed.items():
        fields = _fields_of(str(text))
        if fields is not None:
            times.append({**fields, "mean_us": us})
    return times


def case_series(entries: list[dict], label: str) -> dict:
    """One case (a BxDxSxW label) across the history, oldest first: {"label", "runs": each timed run of it as
    a record of when, where, what, its published seed ("secret": a secret seed was combined with it) and how
    it ended, with its mean_us, "unreadable": how many timed cases were left out because their sizes are not
    integers or their time is no time the reader takes (1e-300, text)}."""
    runs, unreadable = [], 0
    for entry in entries:
        for case in case_times(entry):
            sizes = [case.get(key) for key in harness.SHAPE_FIELDS]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in sizes):
                unreadable += 1
                continue
            if harness.case_label(case) != label:
                continue
            us = time_us(case.get("mean_us"))
            if us is None:
                unreadable += 1
                continue
            secret = case.get("timed_seed") not in (None, case.get("seed"))
            runs.append({key: entry.get(key) for key in ("time", "commit", "gpu", "source", "mode", "outcome",
                                                          "file")}
                        | {"seed": case.get("seed"), "secret": secret, "mean_us": us})
    return {"label": label, "runs": runs, "unreadable": unreadable}


_CASE_COLUMNS = (("time", 26), ("commit", 15), ("gpu", 22), ("source", 9), ("mode", 13), ("seed", 14),
                 ("outcome", 13), ("mean us", -10), ("vs first", -10))  # width; negative: right-aligned


def _case_row(cells: list[str], file: str) -> str:
    """One line of format_case_series: each cell cut to its column, so a long one never shifts the rest."""
    line = "".join(f"{cell[:width - 1]:<{width - 1}} " if width > 0 else f"{cell[:-width]:>{-width}}"
                   for cell, (_, width) in zip(cells, _CASE_COLUMNS))
    return f"{line}  {file}"


def format_case_series(series: dict) -> str:
    """case_series as a table a person reads: each time beside the first passing run of the same file on the
    same GPU (a failed or interrupted run is shown, never a baseline)."""
    first = {}
    rows = [f"{series['label']}: mean us per run, newest last; 'vs first' against the first passing run of the"
            f" same file on the same GPU", _case_row([name for name, _ in _CASE_COLUMNS], "file")]
    for run in series["runs"]:
        key = (run["gpu"], run["file"])
        if run["outcome"] == "pass":
            first.setdefault(key, run["mean_us"])
        ratio = f"{run['mean_us'] / first[key]:.3f}" if key in first else "-"
        cells = [str(run[k] if run[k] is not None else "?") for k in ("time", "commit", "gpu", "source", "mode",
                                                                       "seed", "outcome")]
        cells[5] += "+secret" if run["secret"] else ""  # the runner's secret seed combined with the published one
        rows.append(_case_row(cells + [f"{run['mean_us']:.2f}", ratio], Path(str(run["file"] or "?")).name))
    if series["unreadable"]:
        rows.append(f"{series['unreadable']} timed case(s) in the history left out: a size that is not an integer"
                    f" or a time that is {NOT_A_TIME}")
    return "\n".join(rows)


@contextlib.contextmanager
def locked(path: Path | None = None):
    """The history open for appending, held under an exclusive fcntl lock: one writer at a time, so a
    read-then-append merge never races another process's. Yields the descriptor."""
    path = Path(path or HISTORY)
    misplaced = place_problem(path)  # every writer comes here, those no run's check came before too
    if misplaced:
        raise HistoryError(f"{misplaced}; nothing was written to it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as error:
        raise _refused(path, "written", error) from None
    try:
        _lock(fd, path)
        yield fd
    except OSError as error:  # a write under the lock that fails (a full disk) is the history's error too
        raise _refused(path, "written", error) from None
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _lock(fd: int, path: Path) -> None:
    """The exclusive lock, waited for LOCK_WAIT_S at most: writers hold it for milliseconds, and a run ending
    on a signal (which drops later ones) must not wait on another process without end."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise HistoryError(f"the history {path} stayed locked by another process for {LOCK_WAIT_S:g} s;"
                                   " nothing was written to it") from None
            time.sleep(0.05)


def _append_line(fd: int, entry: dict) -> None:
    """One line in a single write on the O_APPEND descriptor; a file whose last line lacks its newline
    (a write cut short) gets one first."""
    line = (json.dumps(entry, sort_keys=True, default=str) + "\n").encode()
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line
    os.write(fd, line)


def place_problem(path: Path, inputs=()) -> str | None:
    """Why path cannot hold the history however writable it is: entries are JSON lines appended to it, so it
    must not be one of the run's inputs (the submission, the tests file) or any other file eval.py's
    written_over names."""
    clash = harness.written_over(path, [(given, "which this run reads") for given in inputs if given is not None])
    return clash and f"the history {path} {clash}; point WORKSPACE_HISTORY at a file of its own"


def append_problem(path: Path | None = None, inputs=()) -> str | None:
    """Why an entry could not be appended to the history (checked before a run, creating nothing), or None."""
    path = Path(path or HISTORY)
    misplaced = place_problem(path, inputs)
    if misplaced:
        return misplaced
    try:
        if path.exists():
            if not path.is_file():
                return f"the history {path} is not a regular file (WORKSPACE_HISTORY names the file)"
            if not os.access(path, os.W_OK):
                return f"the history {path} cannot be written (no permission)"
            return None
        folder = path.parent
        while not folder.exists():
            folder = folder.parent
    except OSError as error:  # a folder on the way that cannot be looked into
        return f"the history {path} cannot be reached: {error.strerror or error}"
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"the history {path} cannot be created: {folder} takes no new file or folder"
    return None


def append_entry(entry: dict, path: Path | None = None) -> None:
    """Append one entry under the history's lock."""
    with locked(path) as fd:
        _append_line(fd, entry)


def problem(entry) -> str | None:
    """Why an entry cannot be shown, or None."""
    if not isinstance(entry, dict):
        return "not an object"
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return f"no {', '.join(missing)}"
    for key, types in FIELDS.items():
        value = entry.get(key)
        if key in entry and (not isinstance(value, types) or isinstance(value, bool)):
            return f"{key} is {type(value).__name__} {harness.shown(value)}"
    if utc_time(entry["time"]) is None:
        return f"time {harness.shown(entry['time'])} is not an ISO date in the years 1-9999"
    if not entry["gpu"].strip():
        return "gpu is empty"
    if entry.get("submission_id") is not None and remote.decimal_id(entry["submission_id"]) is None:
        return f"submission_id is {harness.shown(entry['submission_id'])}, not an id (0 to 2^63 - 1)"
    if not isinstance(entry.get("timed_cases", []), list):
        return f"timed_cases is {type(entry['timed_cases']).__name__}"
    geomean = entry.get("geomean_us")
    if geomean is not None and time_us(geomean) is None:
        return f"geomean_us is {harness.shown(geomean)}, {NOT_A_TIME}"
    for key in ("score_us", "per_case_us"):
        if key in entry and entry[key] is not None and not isinstance(entry[key], NUMBER + (dict,)):
            return f"{key} is {type(entry[key]).__name__} {harness.shown(entry[key])}"
    runs = entry.get("runs")
    if not isinstance(runs, (list, type(None))):
        return f"runs is {type(runs).__name__}"
    for run in runs or []:
        if not isinstance(run, dict):
            return "a run is not an object"
        score = run.get("score_us")
        if score is not None and time_us(score) is None:
            return f"a run's score_us is {type(score).__name__} {harness.shown(score)}, {NOT_A_TIME}"
    return None


def read_entries(path: Path | None = None, warn=lambda msg: print(msg, file=sys.stderr)) -> list[dict]:
    """Every readable line; a corrupt one is skipped with a warning naming its line number."""
    path = Path(path or HISTORY)
    if not path.exists():
        return []
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as error:
        raise _refused(path, "read", error) from None
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except RecursionError:
            warn(f"warning: {path.name} line {number} is nested too deep to read; skipped")
            continue
        except ValueError as error:
            warn(f"warning: {path.name} line {number} is not JSON ({error}); skipped")
            continue
        why = problem(entry)
        if why:
            warn(f"warning: {path.name} line {number} is not a history entry ({why}); skipped")
            continue
        entries.append(entry)
    return entries


PLOT_FORMATS = (".png", ".pdf", ".svg")
REMOTE_SOURCES = ("popcorn", "remote")
LOCAL_RANKED = "judge"  # a local run of the runner's whole chain (cli.py judge)


class HistoryError(Exception):
    """The history file cannot be read or written; the message is one sentence."""


def _refused(path: Path, doing: str, error: OSError) -> HistoryError:
    """The history's sentence for an OSError; for a folder (a blank WORKSPACE_HISTORY is '.') it says what the
    setting names."""
    named = " (WORKSPACE_HISTORY names the history file, not a folder)" if os.path.isdir(path) else ""
    return HistoryError(f"the history {path} cannot be {doing}: {error.strerror or error}{named}")


def kind_of(entry: dict) -> str:
    """The registry kind the entry was recorded with. Lines written before entries carried one are
    taken as a submission's: eval.py, the server and compare only ever recorded our own files."""
    return str(entry.get("kind", "submission"))


def is_submission(entry: dict) -> bool:
    return kind_of(entry) == "submission"


def best_per_gpu(entries: list[dict]) -> dict:
    """gpu -> index of its passing submission entry with the lowest geomean (baselines never count)."""
    best = {}
    for i, e in enumerate(entries):
        g = e.get("geomean_us")
        if g is None or e.get("outcome") != "pass" or not is_submission(e):
            continue
        if e.get("gpu") not in best or g < entries[best[e.get("gpu")]]["geomean_us"]:
            best[e.get("gpu")] = i
    return best


def format_table(entries: list[dict]) -> str:
    best = set(best_per_gpu(entries).values())
    header = (f"{'':2}{'time':<26}{'commit':<10}{'gpu':<22}{'source':<9}{'mode':<12}{'geomean us':>11}  "
              f"{'outcome':<15}{'id':>8}  file")
    rows = [header]
    for i, e in enumerate(entries):
        g = e.get("geomean_us")
        rows.append(f"{'*' if i in best else ' ':2}{str(e.get('time', '?')):<26}{str(e.get('commit', '?')):<10}"
                    f"{str(e.get('gpu', '?')):<22}{str(e.get('source', '?')):<9}{str(e.get('mode', '?')):<12}"
                    f"{(f'{g:.2f}' if isinstance(g, (int, float)) else '-'):>11}  {str(e.get('outcome', '?')):<15}"
                    f"{str(e.get('submission_id') or '-'):>8}  {Path(str(e.get('file', ''))).name}")
    rows.append("* best passing geomean per GPU, submissions only")
    return "\n".join(rows)


def remote_scores(entry: dict) -> tuple[float | None, float | None]:
    """(public, secret) ranked scores in microseconds of a remote entry."""
    public = secret = None
    for run in entry.get("runs") or []:
        if run.get("mode") == "leaderboard" and run.get("passed") and run.get("score_us") is not None:
            if run.get("secret"):
                secret = run["score_us"] if secret is None else min(secret, run["score_us"])
            else:
                public = run["score_us"] if public is None else min(public, run["score_us"])
    return public, secret


def best_public(entries: list[dict], gpu: str) -> float | None:
    """Our best public ranked score on this GPU, in microseconds, over the server's records (None: none)."""
    ours = [public for public, _ in (remote_scores(e) for e in entries
                                     if e.get("gpu") == gpu and e.get("source") in REMOTE_SOURCES)
            if public is not None]
    return min(ours) if ours else None


def by_file(entries: list[dict]) -> str:
    """Per submitted file (by content hash): its best local geomean per GPU beside its remote scores."""
    files = {}
    for e in entries:
        if not is_submission(e) or e.get("outcome") != "pass":
            continue
        key = e.get("file_hash") or e.get("file") or "?"
        row = files.setdefault(key, {"file": Path(str(e.get("file") or "?")).name, "local": {}, "public": None,
                                     "secret": None})
        if e.get("source") in REMOTE_SOURCES:
            public, secret = remote_scores(e)
            for name, value in (("public", public), ("secret", secret)):
                if value is not None and (row[name] is None or value < row[name]):
                    row[name] = value
        elif isinstance(e.get("geomean_us"), NUMBER):
            gpu = e.get("gpu", "?")
            row["local"][gpu] = min(e["geomean_us"], row["local"].get(gpu, float("inf")))
    lines = [f"{'file':<28}{'hash':<14}{'local geomean us (gpu)':<40}{'B200 public':>12}{'B200 secret':>12}"]
    for key, row in files.items():
        local = ", ".join(f"{v:.2f} ({g})" for g, v in sorted(row["local"].items())) or "-"
        lines.append(f"{row['file'][:27]:<28}{str(key)[:12]:<14}{local[:39]:<40}"
                     f"{_us(row['public']):>12}"
                     f"{_us(row['secret']):>12}")
    return "\n".join(lines)


def _us(value) -> str:
    return f"{value:.2f}" if isinstance(value, NUMBER) else "-"


def _iso_or_now(text) -> str:
    """The server's time, in UTC with its offset, where it reads as a time; else now: an entry must stay readable."""
    moment = utc_time(text)
    return moment.isoformat() if moment else now()


def remote_entry(record: dict, source: str, mode: str | None = None, **extra) -> dict:
    """A history line for what the server said about one submission (always a submission's)."""
    runs = record.get("runs") or []
    public = next((r["score_us"] for r in runs if r.get("mode") == "leaderboard" and not r.get("secret")
                   and r.get("score_us") is not None), None)
    runner = next((r.get("runner") for r in runs if r.get("runner")), None) or record.get("gpu") or "?"
    passed = record.get("status") in ("done", None) and (not runs or all(r.get("passed") for r in runs))
    entry = {"time": _iso_or_now(record.get("time")), "gpu": runner, "kind": "submission", "source": source,
             "mode": mode, "submission_id": record.get("submission_id"), "runs": runs, "geomean_us": public,
             "outcome": "pass" if passed and record.get("status") != "pending" else record.get("status") or "fail"}
    entry.update(extra)
    return entry


def ranked_runs(record: dict) -> list[dict]:
    """A parsed popcorn record's runs, each once: the JSON's runs where popcorn printed them, else the
    score lines' (older output)."""
    if record["runs"]:
        return record["runs"]
    return [{"mode": "leaderboard", "secret": s["secret"], "runner": s["runner"], "passed": True,
             "score_us": s["score_us"]} for s in record["scores"]]


def submission_entry(submitted: dict) -> dict:
    """A submit through popcorn (leaderboard.submit's record): when, what, and what the server said."""
    record = submitted["parsed"]
    return remote_entry(dict(record, runs=ranked_runs(record), status=submitted["status"],
                             gpu=submitted["gpu"], time=now()), "popcorn",
                         submitted["mode"], file=workspace_path(submitted["file"]),
                         file_hash=file_hash(submitted["file"]), commit=git_commit(),
                         leaderboard=submitted["leaderboard"], message=record["message"],
                         output=str(submitted["output"]), scores=record["scores"], format=record["format"],
                         benchmark_means_us=record["benchmark_means_us"], queue=record["queue"],
                         cases=record["cases"], job=record["job"], diagnostics=record["diagnostics"],
                         refusal=record["refusal"], exit_code=submitted["code"], signal=submitted.get("signal"))


def judge_entry(record: dict) -> dict:
    """A local run of the runner's whole chain (judge.judge's record): ranked here, beside the remote results."""
    runs = [{"mode": r["mode"], "secret": r["secret"], "runner": r["runner"], "passed": r["passed"],
             "score_us": r["score"] * 1e6 if r["score"] is not None else None} for r in record["runs"]]
    outcome = {"ranked": "pass", "passed the tests": "tests passed"}.get(record["verdict"], record["verdict"])
    return make_entry(source=LOCAL_RANKED, mode="leaderboard", kind="submission", gpu=record["runner"],
                      file=record["file"], timed_cases=[], outcome=outcome, runs=runs,
                      geomean_us=record["public_s"] * 1e6 if record["public_s"] is not None and outcome == "pass" else None,
                      secret_us=record["secret_s"] * 1e6 if record["secret_s"] is not None else None,
                      secret_seed=record["secret_seed"], hidden_by=record["hidden_by"])


def listed_entry(row: dict) -> dict:
    """One row of `popcorn-cli submissions list` (remote.parse_list)."""
    runs = ([{"mode": "leaderboard", "secret": False, "passed": True, "runner": row["gpu"],
              "score_us": row["score_us"]}] if row["score_us"] else [])
    return remote_entry(dict(row, status="done" if row["status"] == "done" else "pending", runs=runs), "remote",
                         "list", file=row["file_name"], score_text=row["score_text"])


def shown_entry(record: dict) -> dict:
    """One `popcorn-cli submissions show ID` page (remote.parse_show)."""
    status = "done" if record.get("status") == "done" else "pending"
    return remote_entry(dict(record, status=status), "remote", "show", file=record.get("file_name"))


def remote_output_path(what: str) -> Path:
    """Where popcorn's raw answer is kept under results/remote/, written as its bytes arrive."""
    REMOTE.mkdir(parents=True, exist_ok=True)
    return REMOTE / f"{datetime.datetime.now().strftime('%Y%m%d-%H%M%S-%f')}-{what}.txt"


def merge_remote(entries_new: list[dict], path: Path | None = None) -> int:
    """Append the remote entries whose submission id is not yet recorded with the same runs; how many were added."""
    with locked(path) as fd:  # read and append under one lock: another merge waits, then sees these lines
        known = {(e.get("submission_id"), json.dumps(e.get("runs"), sort_keys=True))
                 for e in read_entries(path, warn=lambda msg: None) if e.get("submission_id") is not None}
        added = 0
        for entry in entries_new:
            key = (entry.get("submission_id"), json.dumps(entry.get("runs"), sort_keys=True))
            if key not in known:
                _append_line(fd, entry)
                known.add(key)
                added += 1
    return added


def plot_series(entries: list[dict]) -> dict:
    """label -> [(time in UTC, geomean us)], oldest first: one line per local GPU and per remote runner."""
    series = {}
    for e in entries:
        if not is_submission(e) or e.get("geomean_us") is None or e.get("outcome") != "pass":
            continue
        label = f"{e.get('gpu')} ({'remote' if e.get('source') in REMOTE_SOURCES else 'local'})"
        series.setdefault(label, []).append((utc_time(e["time"]), e["geomean_us"]))
    return {label: sorted(points) for label, points in sorted(series.items())}


def plot(entries: list[dict], out: Path) -> None:
    """Geomean over time of our submissions (plot_series), drawn to out. Needs matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("history --plot needs matplotlib: pip install matplotlib") from None
    series = plot_series(entries)
    fig, ax = plt.subplots(figsize=(8, 4))
    for label, points in series.items():
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_ylabel("geomean (us)")
    ax.set_title("causal_conv1d: our submissions' geomean over time")
    if series:
        ax.legend()
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(out)
