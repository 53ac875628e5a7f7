"""What popcorn-cli and the KernelBot server answer, read into records the history keeps.

Formats (popcorn-cli v1.3.23, 2026-06, and its releases to 2026-09): popcorn-cli 1.3's `submit --no-tui` prints `Geomean score (public|secret)
on RUNNER: X s` lines, then a pretty JSON summary of the runs; older releases printed the server's text
report (a `⏱ MEAN ± ERR µs` line per benchmark, pass/fail per test). `submissions list` prints a
fixed-width table, `submissions show ID` a page of `Key: value` lines and `  - MODE on RUNNER: ...` runs.
Nothing is guessed: output with nothing to read is recorded as "no score found".
"""
import datetime
import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import eval as harness
from scripts.times import number, time_us, utc_time

S_TO_US = 1e6
_SCORE = re.compile(r"^Geomean score \((public|secret)\) on (\S.*?): (\S+) s\s*$", re.MULTILINE)
# Ids are ASCII digits ([0-9]: \d and str.isdigit() take '٣' and '²'), read by decimal_id; times are any word
# in their place, read by times.number, so '1.2.3 µs' is an invalid time, never skipped unseen.
_ID_FIELD = re.compile(r'"submission_id"\s*:\s*([0-9]+)(?!\w)')
_ACCEPTED = re.compile(r"Submission ([0-9]+) accepted\.?(?: (\S+) GPU queue: ([0-9]+) queued job)?")
_FAILED = re.compile(r"Submission ([0-9]+) (failed|timed_out|hacked): (.*)")
_OLD_MEAN = re.compile(r"⏱\s*(\S+?)\s*±\s*(\S+?)\s*(ns|µs|us|ms|s)\b")
MAX_ID = 2 ** 63 - 1  # the server's ids are bigints
_DECIMAL_ID = re.compile(r"[0-9]{1,19}")
_UNIT_US = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
# Newer releases: a row per case before the JSON (✅/❌ SPEC, `> ERROR` under a failed test; a
# benchmark's spec, then `⏱ MEAN ± ERR UNIT`), and a diagnostics block when a public run failed.
_CASE_ROW = re.compile(r"^\s*(✅|❌)\s*(.+?)\s*$")
_CASE_ERROR = re.compile(r"^\s*>\s*(.+?)\s*$")
_SPEC = re.compile(r"^\s*(B:\s*\d+;.*?)\s*$")
_DIAGNOSTICS = re.compile(r"^Failure diagnostics \((\S+) on (\S+)\):", re.MULTILINE)
# The server's refusals, as popcorn relays them: `Server returned status CODE: BODY`.
_HTTP_REFUSAL = re.compile(r"(?:Server returned status|HTTP(?: status)?|status code)\s*:?\s*([0-9]{3})\s*[:-]?\s*(.*)",
                           re.IGNORECASE)
REFUSALS = {400: "the server refused the submission (HTTP 400)", 403: "the leaderboard is closed to this account (HTTP 403)",
            413: "the file is over the server's 1 MB limit (HTTP 413)", 429: "the server's hourly quota is spent (HTTP 429)",
            500: "the server refused the code (HTTP 500)"}
# A leaderboard submission that ran but earned no ranked score (releases after 1.3.23).
_UNRANKED = re.compile(r"^.*(failed secret validation|did not pass secret leaderboard validation"
                       r"|completed without a leaderboard score).*$", re.MULTILINE | re.IGNORECASE)


def _summary_json(text: str):
    """The JSON object popcorn prints after its score lines, or None."""
    for match in re.finditer(r"^\{", text, re.MULTILINE):
        try:
            value, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except (ValueError, RecursionError):  # RecursionError: a line nested past Python's limit
            continue
        if isinstance(value, dict) and "runs" in value:
            return value
    return None


def decimal_id(value) -> int | None:
    """A submission id (or another count the server gives) from an int or ASCII digits, at most MAX_ID; None for
    anything else. Never int() on text str.isdigit() takes ('²' raises) or on more than 4,300 digits (refused)."""
    if isinstance(value, str):
        value = int(value.strip()) if _DECIMAL_ID.fullmatch(value.strip()) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_ID else None


def _seconds(score) -> float | None:
    """A time in seconds as popcorn or the server gives it: a finite number of 0 or more (times.number), else None."""
    value = number(score)
    return value if value is not None and value >= 0 else None


def _truncated_summary(text: str) -> bool:
    """A JSON object opens at the start of a line and never decodes: popcorn's answer was cut mid-object."""
    return re.search(r"^\{", text, re.MULTILINE) is not None


def _score_us(score):
    """Seconds -> microseconds; None for anything that is not a time (times.time_us: never a made-up score,
    nan, inf, a negative, a zero or a 1e-300 time is no score)."""
    value = _seconds(score)
    return None if value is None else time_us(value * S_TO_US)


def _timed_us(mean: str, err: str, unit: str) -> tuple[float, float] | None:
    """A benchmark's `MEAN ± ERR UNIT` as (mean, err) in microseconds; None where MEAN is no time or ERR no
    number of 0 or more."""
    scale, mean_value, err_value = _UNIT_US[unit], number(mean), _seconds(err)
    if mean_value is None or err_value is None:
        return None
    mean_us = time_us(mean_value * scale)
    return None if mean_us is None else (mean_us, err_value * scale)


def _summary_text(value) -> str | None:
    return None if value is None else str(value)


def _summary_flag(value) -> bool:
    """JSON's true, or the text 'true' (any case); every other value is false, never bool('false')."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def refusal(text: str) -> dict | None:
    """An HTTP refusal popcorn relayed -> {code, sentence, server, wait_s}, or None.

    The sentence is one line: what the refusal means, and the server's own words.
    """
    for line in text.splitlines():
        match = _HTTP_REFUSAL.search(line)
        if not match or not 400 <= int(match[1]) < 600:
            continue
        code, body = int(match[1]), _server_message(match[2])
        what = REFUSALS.get(code, f"the server refused the submission (HTTP {code})")
        if code == 400 and "deadline" in body.lower():
            what = "the leaderboard's deadline has passed (HTTP 400)"
        if code == 500 and "stream" in body.lower():
            what = "the server refused code that contains the word 'stream' (HTTP 500)"
        wait = re.search(r"[Tt]ry again in ([0-9]+(?:\.[0-9]+)?)\s*s", body)
        wait_s = number(wait[1]) if wait else None  # None for 400 digits: no wait of inf s
        sentence = f"{what}: {body.rstrip('.')}" if body else what
        if wait_s is not None:
            sentence += f" (wait {wait_s:.0f} s before the next try)"
        return {"code": code, "sentence": sentence.rstrip(".") + ".", "server": body, "wait_s": wait_s}
    return None


def _server_message(body: str) -> str:
    """The server's words out of a relayed body: a JSON `detail` where there is one, else the text."""
    body = body.strip()
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: a body nested past Python's limit
        return body
    if isinstance(value, dict):
        return str(value.get("detail") or value.get("message") or value.get("error") or body)
    return body


def parse_case_rows(text: str) -> list[dict]:
    """The per-case rows of newer releases: tests as {spec, passed, error}, benchmarks as {spec, mean_us, err_us}."""
    cases, spec = [], None
    for line in text.splitlines():
        row = _CASE_ROW.match(line)
        if row:
            cases.append({"spec": row[2], "passed": row[1] == "✅", "error": None})
            spec = None
            continue
        error = _CASE_ERROR.match(line)
        if error and cases and not cases[-1]["passed"] and cases[-1].get("error") is None:
            cases[-1]["error"] = error[1]
            continue
        timed = _OLD_MEAN.search(line)
        if timed and spec is not None:
            read = _timed_us(*timed.groups())  # an unreadable time is no row: parse_submit_output names it
            if read is not None:
                cases.append({"spec": spec, "mean_us": read[0], "err_us": read[1]})
            spec = None
            continue
        match = _SPEC.match(line)
        spec = match[1] if match else spec
    return cases


def parse_submit_output(text: str) -> dict:
    """popcorn-cli submit's output (stdout or the -o file) -> a record of what the server said.

    status: "done", "failed" / "timed_out" / "hacked" (the job's), "refused" (an HTTP refusal before
    anything ran), "unranked" (a ranked submit that earned no score), or "no score found".
    """
    ids = {decimal_id(found) for found in _ID_FIELD.findall(text)} - {None}
    record = {"submission_id": None, "status": "no score found", "message": "", "runs": [], "scores": [],
              "invalid_scores": [], "ids_found": sorted(ids),
              "benchmark_means_us": [], "tests_passed": None, "tests_failed": None, "format": None,
              "queue": None, "cases": [], "job": None, "diagnostics": None, "refusal": None}
    accepted = _ACCEPTED.search(text)
    if accepted:
        record["submission_id"] = decimal_id(accepted[1])
        if accepted[2]:
            record["queue"] = {"runner": accepted[2], "queued": decimal_id(accepted[3])}
    found = _SCORE.findall(text)
    record["scores"] = [{"secret": kind == "secret", "runner": runner, "score_us": _score_us(value)}
                        for kind, runner, value in found if _score_us(value) is not None]
    record["invalid_scores"] = [f"{kind} on {runner}: {value} s" for kind, runner, value in found
                                if _score_us(value) is None]
    record["cases"] = parse_case_rows(text)
    summary = _summary_json(text)
    if summary is not None:
        record["format"] = "1.3" if "job" not in summary else "1.3 with job"
        summary_id = decimal_id(summary.get("submission_id"))  # None: the id read from popcorn's text stands
        record["submission_id"] = record["submission_id"] if summary_id is None else summary_id
        record["leaderboard"] = _summary_text(summary.get("leaderboard"))
        runs = summary.get("runs") if isinstance(summary.get("runs"), list) else []
        record["runs"] = [{"mode": _summary_text(run.get("mode")), "secret": _summary_flag(run.get("secret")),
                           "runner": _summary_text(run.get("runner")), "passed": _summary_flag(run.get("passed")),
                           "score_us": _score_us(run.get("score"))}
                          for run in runs if isinstance(run, dict)]
        record["invalid_scores"] += [f"{run.get('mode')} on {run.get('runner')}: {harness.shown(run.get('score'))}"
                                     for run in runs
                                     if isinstance(run, dict) and run.get("score") is not None
                                     and _score_us(run.get("score")) is None]
        if isinstance(summary.get("job"), dict):
            record["job"] = {"status": summary["job"].get("status"), "error": summary["job"].get("error")}
    timed = [(found, _timed_us(*found)) for found in _OLD_MEAN.findall(text)]
    means = [read[0] for _, read in timed if read is not None]
    record["invalid_scores"] += [f"benchmark time {harness.shown(f'{mean} ± {err} {unit}')}" for (mean, err, unit), read
                                 in timed if read is None]
    if means and summary is None:
        record["format"] = "text report"
        record["benchmark_means_us"] = means
    passed, failed = text.count("✅"), text.count("❌")
    if summary is None and (passed or failed):
        record["format"] = record["format"] or "text report"
        record["tests_passed"], record["tests_failed"] = passed, failed
    diagnostics = _DIAGNOSTICS.search(text)
    if diagnostics:
        record["diagnostics"] = text[diagnostics.start():].split("\n{", 1)[0].strip()
    failure = _FAILED.search(text)
    refused = refusal(text) if record["submission_id"] is None else None
    unranked = _UNRANKED.search(text)
    job_failed = record["job"] and record["job"]["status"] not in (None, "succeeded", "done", "completed")
    if failure:
        failed_id = decimal_id(failure[1])
        record["submission_id"] = record["submission_id"] if failed_id is None else failed_id
        record["status"], record["message"] = failure[2], failure[3].strip()
    elif refused:
        record["status"], record["message"], record["refusal"] = "refused", refused["sentence"], refused
    elif diagnostics or job_failed or any(r["passed"] is False for r in record["runs"] if not r["secret"]):
        record["status"] = "failed"
        record["message"] = (record["job"] or {}).get("error") or (
            f"the public {diagnostics[1]} run on {diagnostics[2]} failed" if diagnostics else "a public run failed")
    elif record["invalid_scores"]:
        record["status"] = "invalid score"
        record["message"] = ("popcorn gave a score that is not a finite positive number, so none was recorded: "
                             + "; ".join(record["invalid_scores"]))
    elif summary is None and _truncated_summary(text):
        record["status"] = "partial"
        record["message"] = ("popcorn's summary JSON is cut short; what it holds is kept (ids "
                             + (", ".join(map(str, record["ids_found"])) or "none") + ")")
        record["submission_id"] = record["submission_id"] or (record["ids_found"] or [None])[0]
    elif unranked or any(r["secret"] and not r["passed"] for r in record["runs"]):
        record["status"] = "unranked"
        record["message"] = unranked[0].strip() if unranked else "the secret run failed, so the entry is hidden"
    elif record["runs"] or record["scores"] or means or passed or failed:
        record["status"] = "done"
    return record


# `submissions list` prints `{:<8} {:<20} {:<20} {:<20} {:<12} {:<10} {:>10}`: the columns' spans.
_LIST_COLUMNS = {"submission_id": (0, 8), "leaderboard": (9, 29), "file_name": (30, 50), "time": (51, 71),
                 "gpu": (72, 84), "status": (85, 95), "score_text": (96, None)}


_LIST_STATUSES = ("done", "pending", "running", "failed", "timed_out", "hacked", "submitted", "queued")


def parse_list(text: str, warn=lambda message: None) -> list[dict]:
    """`submissions list`'s table -> one dict per row (score in microseconds; older releases print 4
    decimals of a second, so a fast kernel reads 0.0000 there: that stays as the printed text, never
    a 0 score). A row is read by the table's columns; a line that does not fit them is skipped with a
    warning naming it, never taken for a submission. ValueError where the answer has no table header at all
    (empty, or another page): that is no list, not a list of none."""
    if not any(line.startswith("ID ") for line in text.splitlines()):
        raise ValueError("popcorn's answer is not a submissions list (no 'ID Leaderboard File ...' header line)")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith(("ID ", "---")) or set(line.strip()) <= {"-"}:
            continue
        row = {name: line[a:b].strip() for name, (a, b) in _LIST_COLUMNS.items()}
        score, submission_id = row["score_text"], decimal_id(row["submission_id"])
        problems = [why for why, bad in (
            ("its ID column is not a number", submission_id is None),
            ("its time column is not a date", not _is_time(row["time"])),
            ("its status column is not a status", row["status"] not in _LIST_STATUSES),
            ("its score column is not a score", score not in ("", "-", "not ranked") and _seconds(score) is None),
        ) if bad]
        if problems:
            warn(f"line {number} of popcorn's list is not a row ({problems[0]}): {line.strip()[:80]}")
            continue
        row["submission_id"] = submission_id
        row["gpu"] = None if row["gpu"] in ("", "-") else row["gpu"]
        row["score_us"] = _score_us(score) or None
        rows.append(row)
    return rows


def _is_time(text: str) -> bool:
    return utc_time(text) is not None


_RUN = re.compile(r"^\s*- (\S+) on (\S+): (passed|failed) \(score: ([^)]*)\)( \[secret\])?")


def parse_show(text: str) -> dict:
    """`submissions show ID`'s page -> {submission_id, leaderboard, file_name, time, status, runs}."""
    record = {"runs": []}
    head = re.search(r"^Submission #(\S*)", text, re.MULTILINE)
    if head is None:
        raise ValueError("this is not a `submissions show` page: no 'Submission #ID' line")
    record["submission_id"] = decimal_id(head[1])
    if record["submission_id"] is None:
        raise ValueError(f"the page's 'Submission #' line gives {harness.shown(head[1])}, which is not a submission id")
    fields = {"Leaderboard": "leaderboard", "File": "file_name", "Submitted": "time", "Status": "status"}
    for key, name in fields.items():
        match = re.search(rf"^{key}:\s+(.*)$", text, re.MULTILINE)
        if match:
            record[name] = re.sub(r" \(id: [0-9]+\)$", "", match[1].strip())
    code_at = text.find("\nCode:")
    for line in (text[:code_at] if code_at >= 0 else text).splitlines():
        run = _RUN.match(line)
        if run:
            record["runs"].append({"mode": run[1], "runner": run[2], "passed": run[3] == "passed",
                                   "secret": bool(run[5]), "score_text": run[4],  # kept as printed: 'n/a' is no score
                                   "score_us": _score_us(run[4])})
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
            data = yaml.safe_load(config.read_bytes().decode("utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError) as error:  # nested past Python's limit
            raise RemoteError(f"{config} cannot be read as YAML ({type(error).__name__}); popcorn-cli register"
                              " writes it anew") from None
        cli_id = data.get("cli_id") if isinstance(data, dict) else None
        if cli_id is not None and (not isinstance(cli_id, (str, int)) or isinstance(cli_id, bool)
                                   or not str(cli_id).isprintable() or not str(cli_id).strip()):
            raise RemoteError(f"{config}: cli_id is {type(cli_id).__name__} {str(cli_id)[:40]!r}, not one line of"
                              " printable text; popcorn-cli register writes it anew")
        cli_id = None if cli_id is None else str(cli_id)
    return environ.get("POPCORN_API_URL"), cli_id


def _check_url(api_url: str) -> None:
    """RemoteError naming POPCORN_API_URL where it is no http(s) URL to ask, checked before any request parses
    it: urlparse raises on an unclosed '[', its .port on a port that is no number in 0-65535, and a control
    character would break the request (and the sentence) later."""
    try:
        parsed = urllib.parse.urlparse(api_url or "")
        usable = parsed.scheme in ("http", "https") and bool(parsed.hostname) and parsed.port != 0
    except ValueError as error:
        raise RemoteError(f"POPCORN_API_URL={harness.shown(api_url)} is not an http(s) URL ({error}).") from None
    if not usable or not api_url.isprintable():
        raise RemoteError(f"POPCORN_API_URL={harness.shown(api_url)} is not an http(s) URL.")


def _get_json(api_url: str, path: str, cli_id: str | None, timeout: float, what: str):
    """GET {api_url}{path} as popcorn would (its cli_id header); the decoded JSON, or RemoteError."""
    _check_url(api_url)
    request = urllib.request.Request(api_url.rstrip("/") + path, headers={"X-Popcorn-Cli-Id": cli_id} if cli_id else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            body = answer.read()
    except urllib.error.HTTPError as error:
        raise RemoteError(f"the server refused {what}: HTTP {error.code}"
                          f"{' (register with popcorn-cli first)' if error.code in (401, 403) else ''}.") from None
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise RemoteError(f"the server at {api_url} could not be reached: {getattr(error, 'reason', error)}.") from None
    except http.client.HTTPException as error:  # it closed mid-body, or answered something that is not HTTP
        raise RemoteError(f"the server at {api_url} broke off its answer to {what}"
                          f" ({type(error).__name__}).") from None
    try:
        return json.loads(body)
    except ValueError:
        raise RemoteError(f"the server at {api_url} answered {what} with something that is not JSON.") from None


def fetch_standings(api_url: str, leaderboard: str, gpu: str, cli_id: str | None = None, limit: int = 20,
                    timeout: float = 15) -> list[dict]:
    """The leaderboard's public ranking for one GPU: best passing run per user, best first. Rows
    that are not objects, and scores or ranks that are not numbers, are dropped or blanked."""
    path = f"/submissions/{urllib.parse.quote(leaderboard)}/{urllib.parse.quote(gpu)}?limit={limit}&offset=0"
    rows = _get_json(api_url, path, cli_id, timeout, f"the ranking of {leaderboard} on {gpu}")
    if not isinstance(rows, list):
        raise RemoteError(f"the server at {api_url} answered a {type(rows).__name__}, not a ranking.")
    clean = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        score = _score_us(row.get("submission_score"))
        rank = row.get("rank")
        clean.append(dict(row, submission_score=None if score is None else score / S_TO_US,
                          rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None))
    return sorted(clean, key=lambda row: row["rank"] if row["rank"] is not None else float("inf"))


def fetch_board(api_url: str, leaderboard: str, cli_id: str | None = None, timeout: float = 10) -> dict:
    """The server's own word on one leaderboard (GET /leaderboards): {name, deadline, gpu_types}.

    deadline is an aware datetime (UTC where the server gives no offset), or None where it gives none.
    """
    boards = _get_json(api_url, "/leaderboards", cli_id, timeout, "the list of leaderboards")
    if not isinstance(boards, list):
        raise RemoteError(f"the server at {api_url} answered a {type(boards).__name__}, not a list of leaderboards.")
    board = next((b for b in boards if isinstance(b, dict) and b.get("name") == leaderboard), None)
    if board is None:
        raise RemoteError(f"the server at {api_url} lists no leaderboard named {leaderboard}.")
    gpus = board.get("gpu_types")
    raw = board.get("deadline")
    deadline = utc_time(raw)
    return {"name": leaderboard, "deadline": deadline, "deadline_text": None if raw is None or deadline else str(raw),
            "gpu_types": [str(g) for g in gpus] if isinstance(gpus, list) else None}


def deadline_passed(board: dict, now: datetime.datetime | None = None) -> bool:
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return board["deadline"] is not None and board["deadline"] <= now


def closed_sentence(board: dict, now: datetime.datetime | None = None) -> str:
    """One sentence for a board past its deadline, naming the deadline and today's date, as the server would."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return (f"the {board['name']} leaderboard closed on {board['deadline'].strftime('%Y-%m-%d %H:%M UTC')} and today is"
            f" {now.strftime('%Y-%m-%d')}: the server refuses every submission to it (HTTP 400), so nothing was sent;"
            f" `python scripts/cli.py judge` judges a file locally as the runner would")


def rank_of(score_us: float, standings: list[dict]) -> int:
    """The place a score would take: one more than the entries strictly faster."""
    return 1 + sum(1 for row in standings if row.get("submission_score") is not None
                   and row["submission_score"] * S_TO_US < score_us)


def format_standings(standings: list[dict], ours_us: float | None, top: int = 10) -> str:
    lines = [f"{'rank':>4}  {'user':<24}{'score us':>10}"]
    for row in standings[:top]:
        score = row.get("submission_score")
        rank = row.get("rank") if row.get("rank") is not None else "?"
        lines.append(f"{rank:>4}  {str(row.get('user_name', '?'))[:23]:<24}"
                     f"{(f'{score * S_TO_US:.2f}' if score is not None else '-'):>10}")
    if ours_us is None:
        lines.append("ours: no B200 score recorded yet (submit --mode leaderboard, or remote list)")
    else:
        lines.append(f"ours: {ours_us:.2f} us would take rank {rank_of(ours_us, standings)} of "
                     f"{len(standings) + 1}")
    return "\n".join(lines)
