"""What popcorn-cli and the KernelBot server answer, read into records the history keeps.

Formats (../shared/POPCORN.md): popcorn-cli 1.3's `submit --no-tui` prints `Geomean score (public|secret)
on RUNNER: X s` lines, then a pretty JSON summary of the runs; older releases printed the server's text
report (a `⏱ MEAN ± ERR µs` line per benchmark, pass/fail per test). `submissions list` prints a
fixed-width table, `submissions show ID` a page of `Key: value` lines and `  - MODE on RUNNER: ...` runs.
Nothing is guessed: output with nothing to read is recorded as "no score found".
"""
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

S_TO_US = 1e6
_SCORE = re.compile(r"^Geomean score \((public|secret)\) on (\S+): ([0-9.eE+-]+) s\s*$", re.MULTILINE)
_ACCEPTED = re.compile(r"Submission (\d+) accepted")
_FAILED = re.compile(r"Submission (\d+) (failed|timed_out|hacked): (.*)")
_OLD_MEAN = re.compile(r"⏱\s*([\d.]+)\s*±\s*([\d.]+)\s*(ns|µs|us|ms|s)\b")
_UNIT_US = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}


def _summary_json(text: str):
    """The JSON object popcorn prints after its score lines, or None."""
    for match in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            value, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except ValueError:
            continue
        if isinstance(value, dict) and "runs" in value:
            return value
    return None


def _score_us(score):
    return None if score is None else float(score) * S_TO_US


def parse_submit_output(text: str) -> dict:
    """popcorn-cli submit's output (stdout or the -o file) -> a record of what the server said."""
    record = {"submission_id": None, "status": "no score found", "message": "", "runs": [], "scores": [],
              "benchmark_means_us": [], "tests_passed": None, "tests_failed": None, "format": None}
    accepted = _ACCEPTED.search(text)
    if accepted:
        record["submission_id"] = int(accepted[1])
    record["scores"] = [{"secret": kind == "secret", "runner": runner, "score_us": _score_us(value)}
                        for kind, runner, value in _SCORE.findall(text)]
    summary = _summary_json(text)
    if summary is not None:
        record["format"] = "1.3"
        record["submission_id"] = summary.get("submission_id", record["submission_id"])
        record["leaderboard"] = summary.get("leaderboard")
        record["runs"] = [{"mode": run.get("mode"), "secret": bool(run.get("secret")), "runner": run.get("runner"),
                           "passed": bool(run.get("passed")), "score_us": _score_us(run.get("score"))}
                          for run in summary.get("runs", [])]
    means = [float(mean) * _UNIT_US[unit] for mean, _, unit in _OLD_MEAN.findall(text)]
    if means and summary is None:
        record["format"] = "text report"
        record["benchmark_means_us"] = means
    passed, failed = text.count("✅"), text.count("❌")
    if summary is None and (passed or failed):
        record["format"] = record["format"] or "text report"
        record["tests_passed"], record["tests_failed"] = passed, failed
    failure = _FAILED.search(text)
    if failure:
        record["submission_id"] = int(failure[1])
        record["status"], record["message"] = failure[2], failure[3].strip()
    elif record["runs"] or record["scores"] or means or passed or failed:
        record["status"] = "done"
    return record


# `submissions list` prints `{:<8} {:<20} {:<20} {:<20} {:<12} {:<10} {:>10}`: the columns' spans.
_LIST_COLUMNS = {"submission_id": (0, 8), "leaderboard": (9, 29), "file_name": (30, 50), "time": (51, 71),
                 "gpu": (72, 84), "status": (85, 95), "score_text": (96, None)}


def parse_list(text: str) -> list[dict]:
    """`submissions list`'s table -> one dict per row (score in microseconds; the list prints 4 decimals
    of a second, so a fast kernel reads 0.0000 there: that stays as the printed text, never a 0 score)."""
    rows = []
    for line in text.splitlines():
        if not line[:8].strip().isdigit():
            continue
        row = {name: line[a:b].strip() for name, (a, b) in _LIST_COLUMNS.items()}
        row["submission_id"] = int(row["submission_id"])
        row["gpu"] = None if row["gpu"] in ("", "-") else row["gpu"]
        score = None if row["score_text"] in ("", "-") else float(row["score_text"])
        row["score_us"] = _score_us(score) if score else None
        rows.append(row)
    return rows


_RUN = re.compile(r"^\s*- (\S+) on (\S+): (passed|failed) \(score: ([^)]*)\)( \[secret\])?")


def parse_show(text: str) -> dict:
    """`submissions show ID`'s page -> {submission_id, leaderboard, file_name, time, status, runs}."""
    record = {"runs": []}
    head = re.search(r"^Submission #(\d+)", text, re.MULTILINE)
    if head is None:
        raise ValueError("this is not a `submissions show` page: no 'Submission #ID' line")
    record["submission_id"] = int(head[1])
    fields = {"Leaderboard": "leaderboard", "File": "file_name", "Submitted": "time", "Status": "status"}
    for key, name in fields.items():
        match = re.search(rf"^{key}:\s+(.*)$", text, re.MULTILINE)
        if match:
            record[name] = re.sub(r" \(id: \d+\)$", "", match[1].strip())
    code_at = text.find("\nCode:")
    for line in (text[:code_at] if code_at >= 0 else text).splitlines():
        run = _RUN.match(line)
        if run:
            score = None if run[4] in ("-", "") else float(run[4])
            record["runs"].append({"mode": run[1], "runner": run[2], "passed": run[3] == "passed",
                                   "secret": bool(run[5]), "score_text": run[4],
                                   "score_us": _score_us(score) if score else None})
    return record


# ----------------------------------------------------------------------------- the public ranking


class RemoteError(Exception):
    """The server could not be asked, or refused; the message is one sentence."""


def popcorn_settings(environ, home: Path) -> tuple[str | None, str | None]:
    """(POPCORN_API_URL, cli_id from ~/.popcorn.yaml), as popcorn itself finds them."""
    cli_id = None
    config = home / ".popcorn.yaml"
    if config.is_file():
        import yaml

        try:
            data = yaml.safe_load(config.read_text()) or {}
            cli_id = data.get("cli_id") if isinstance(data, dict) else None
        except yaml.YAMLError:
            cli_id = None
    return environ.get("POPCORN_API_URL"), cli_id


def fetch_standings(api_url: str, leaderboard: str, gpu: str, cli_id: str | None = None, limit: int = 20,
                    timeout: float = 15) -> list[dict]:
    """The leaderboard's public ranking for one GPU: best passing run per user, best first."""
    url = f"{api_url.rstrip('/')}/submissions/{urllib.parse.quote(leaderboard)}/{urllib.parse.quote(gpu)}" \
          f"?limit={limit}&offset=0"
    request = urllib.request.Request(url, headers={"X-Popcorn-Cli-Id": cli_id} if cli_id else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
    except urllib.error.HTTPError as error:
        raise RemoteError(f"the server refused the ranking of {leaderboard} on {gpu}: HTTP {error.code}"
                          f"{' (register with popcorn-cli first)' if error.code in (401, 403) else ''}.") from None
    except (urllib.error.URLError, OSError) as error:
        raise RemoteError(f"the server at {api_url} could not be reached: {getattr(error, 'reason', error)}.") from None
    try:
        rows = json.loads(body)
    except ValueError:
        raise RemoteError(f"the server at {api_url} answered something that is not JSON.") from None
    if not isinstance(rows, list):
        raise RemoteError(f"the server at {api_url} answered a {type(rows).__name__}, not a ranking.")
    return sorted(rows, key=lambda row: row.get("rank") or float("inf"))


def rank_of(score_us: float, standings: list[dict]) -> int:
    """The place a score would take: one more than the entries strictly faster."""
    return 1 + sum(1 for row in standings if row.get("submission_score") is not None
                   and row["submission_score"] * S_TO_US < score_us)


def format_standings(standings: list[dict], ours_us: float | None, top: int = 10) -> str:
    lines = [f"{'rank':>4}  {'user':<24}{'score us':>10}"]
    for row in standings[:top]:
        score = row.get("submission_score")
        lines.append(f"{row.get('rank', '?'):>4}  {str(row.get('user_name', '?'))[:23]:<24}"
                     f"{(f'{score * S_TO_US:.2f}' if score is not None else '-'):>10}")
    if ours_us is None:
        lines.append("ours: no B200 score recorded yet (submit --mode leaderboard, or remote list)")
    else:
        lines.append(f"ours: {ours_us:.2f} us would take rank {rank_of(ours_us, standings)} of "
                     f"{len(standings) + 1}")
    return "\n".join(lines)
