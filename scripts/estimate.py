"""What the B200 would say: an estimate of the board's score from a compare run on the GPU you have.

An estimate, never a score: the board ranks on B200_Nebius, which nobody here can reach. Two methods,
both shown; the range runs from the lowest to the highest figure either gives, each end named by its method.

1. Bandwidth model. The floor (the fastest copy of x per case, the compare record's 'floor' row) is fitted
   as fixed time + bytes / bandwidth over the leaderboard cases and the large shapes of the same run, each
   point weighted by its relative error. Bytes are x read once and out written once (8 B per element of
   x, fp32); the weights and bias are left out (under 0.1% here). On the B200 the fixed part is kept and the
   bandwidth is scaled by the vendors' figures: at best by the HBM bandwidth ratio (the low end), at worst
   by the SM count ratio (the high end: if the copy is limited by what each SM can keep in flight).
   A kernel's B200 time per case is its measured ratio over the floor times the B200 floor; its estimate
   is the geomean over the three leaderboard cases (its geomean ratio where it has no per-case times).
   Assumed: the kernel's ratio over a copy carries over between cards, and a copy on the B200 is
   the same fixed launch cost plus bytes moved at the scaled bandwidth.
2. Calibration on public entries. The board's reported scores are facts (estimate_figures.json, with their
   date). A compare variant named boardK_*.py (or boardK.py) is taken as the public kernel of board entry
   #K: its B200 score over its local geomean is a ratio; a kernel's estimate is its local geomean times
   each ratio, the range their spread. Where the run holds no such entry, the shipped ratios (measured on
   the card and date the data file names) are used, on that card only. Assumed: the entries' public code
   is what ran on the board (it lacks their B200-only control files), and run-to-run drift (a few percent)
   is not corrected.

The rank is the place the range would take in the board's public standings: the server's (`remote
standings`) when it answers, else the recorded ones with their date. Missing inputs (no large shapes,
an unknown GPU, no copies, no calibration for this card) are named, never filled in.
"""
import datetime
import json
import os
import re
from pathlib import Path

import eval as harness
from scripts import history, leaderboard, remote
from scripts.times import NOT_A_TIME, time_us

FIGURES = Path(__file__).with_name("estimate_figures.json")
BOARD_ENTRY = re.compile(r"board(\d+)(?:[_-]|$)")  # a compare row named boardK or boardK_* is board entry #K
BOARD_GPU = leaderboard.LEADERBOARD_GPUS[leaderboard.LEADERBOARD][0]
FLOOR = "floor"  # compare.FLOOR: the per-case fastest copy of x


class EstimateError(Exception):
    """A compare record or the figures cannot be read; the message is one sentence."""


def load_figures(path: Path = FIGURES) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise EstimateError(f"the estimate's figures {path} cannot be read: {error}") from None


def read_record(path: Path) -> dict:
    """A compare.json, checked for what the estimate reads: device, cases and impls with per-case times and
    geomeans, each a time (times.time_us) or null: a 400-digit integer, Infinity or 1e-300 is refused here,
    before it overflows or reads 0.00 us at rank 1."""
    try:
        record = json.loads(Path(path).read_bytes().decode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError) as error:  # RecursionError: nested past Python's limit
        raise EstimateError(f"{path} is not a readable JSON file: {error}") from None
    if not isinstance(record, dict) or not isinstance(record.get("impls"), dict) or not isinstance(
            record.get("cases"), list):
        raise EstimateError(f"{path} is not a compare record (it needs 'cases' and 'impls', as compare writes)")
    for name, row in record["impls"].items():
        if not isinstance(row, dict) or not isinstance(row.get("per_case_us", {}), dict):
            raise EstimateError(f"{path}: the row {name!r} is not a compare row (no per_case_us object)")
        for case, us in [*row.get("per_case_us", {}).items(), ("its geomean", row.get("geomean_us"))]:
            if us is not None and time_us(us) is None:
                raise EstimateError(f"{path}: the row {name!r} gives {case} {harness.shown(us)} us, {NOT_A_TIME}")
    return record


def leaderboard_cases() -> list[str]:
    return [c.label for c in harness.cases_from_task("benchmarks")]


def with_case_labels(record: dict) -> dict:
    """The record with its cases named by their label, whichever spelling it was written in (records before
    the label named cases BxDxS, or BxDxS/Wk); a name that is no case is left as it is."""
    def label(case):
        return history.case_label_of(case) or case
    impls = {name: dict(row, per_case_us={label(c): us for c, us in row["per_case_us"].items()})
             if isinstance(row.get("per_case_us"), dict) else row for name, row in record["impls"].items()}
    return dict(record, cases=[label(c) for c in record["cases"]], impls=impls)


def card_of(device, figures: dict) -> str | None:
    """The figures' name for a device ('NVIDIA H200' -> 'H200'), or None where none matches."""
    words = re.findall(r"[A-Z0-9]+", str(device or "").upper())
    return next((card for card in figures["gpus"] if card in words), None)


def case_bytes(case: str) -> int:
    """Bytes a copy of x moves for a named case (BxDxSxW, or an older spelling): x read once, out written once, fp32."""
    label = history.case_label_of(case)
    if label is None:
        raise EstimateError(f"the case {case!r} is not named BxDxS, so its bytes are unknown")
    args = harness.parse_label(label)
    return 8 * args["B"] * args["D"] * args["S"]


def _times(row: dict) -> dict:
    return {case: time_us(us) for case, us in (row.get("per_case_us") or {}).items() if time_us(us)}


def floor_of(record: dict) -> dict:
    """case -> the floor's microseconds: the record's floor row, else the fastest copy row per case."""
    impls = record["impls"]
    if FLOOR in impls:
        return _times(impls[FLOOR])
    copies = [_times(row) for row in impls.values() if row.get("kind") == "copy"]
    cases = {case for times in copies for case in times}
    return {case: min(t[case] for t in copies if case in t) for case in cases}


def fit_floor(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(fixed us, bytes per us) of t = fixed + bytes / bandwidth, least squares in relative error. EstimateError
    where the fit is no copy's, its bandwidth or its fixed time not positive (times that shrink as the bytes
    grow, or grow faster than in proportion): scaled to the B200 it printed '-5972.49 TB/s'."""
    w = [1 / t ** 2 for _, t in points]
    sw, sx, sy = sum(w), sum(wi * x for wi, (x, _) in zip(w, points)), sum(wi * t for wi, (_, t) in zip(w, points))
    sxx = sum(wi * x * x for wi, (x, _) in zip(w, points))
    sxy = sum(wi * x * t for wi, (x, t) in zip(w, points))
    slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx)
    fixed_us = (sy - slope * sx) / sw
    if not (slope > 0 and fixed_us > 0):
        bandwidth = f"{1 / slope / 1e6:.2f} TB/s" if slope else "an infinite bandwidth"
        raise EstimateError(f"the floor's fit gives {fixed_us:.2f} us + bytes / {bandwidth}, not both positive, so the"
                            " copies' times are no fixed cost plus bytes at a bandwidth")
    return fixed_us, 1 / slope


def estimable(row: dict) -> bool:
    """A row that computes the task and passed every check: copies, the reference and failed kernels get none."""
    return row.get("kind") not in ("copy", "reference") and not row.get("errors")


def _ratios_over(times: dict, floor: dict, cases: list[str]):
    """The kernel's ratio over the floor per leaderboard case; None where it lacks a case's time."""
    if all(times.get(c) for c in cases):
        return {c: times[c] / floor[c] for c in cases}
    return None


def bandwidth_model(record: dict, figures: dict, cases: list[str]) -> dict:
    """Method 1: {'missing': [why], 'fit': ..., 'b200_floor_us': (low, high), 'impls': {name: (low, high)}}."""
    out = {"method": "bandwidth model", "missing": [], "impls": {}}
    card = card_of(record.get("device"), figures)
    if card is None:
        out["missing"].append(f"the GPU {record.get('device')!r} has no figures (known: {', '.join(figures['gpus'])})")
    floor = floor_of(record)
    if not floor:
        out["missing"].append("the run has no copies of x, so no floor")
    elif not all(c in floor for c in cases):
        out["missing"].append(f"the floor lacks leaderboard cases ({', '.join(c for c in cases if c not in floor)})")
    large = [c for c in floor if c not in cases]
    if floor and not large:
        out["missing"].append("the run has no large shapes (compare --shapes large), so bandwidth and fixed time"
                              " cannot be told apart")
    if not out["missing"] and len({case_bytes(c) for c in cases + large}) < 2:
        out["missing"].append("the run's cases all move the same bytes, so bandwidth and fixed time cannot be told apart")
    if out["missing"]:
        return out
    try:
        fixed_us, bytes_per_us = fit_floor([(case_bytes(c), floor[c]) for c in cases + large])
    except EstimateError as error:
        out["missing"].append(str(error))
        return out
    local, b200 = figures["gpus"][card], figures["gpus"][card_of(figures["target"], figures)]
    scales = {"HBM ratio": b200["hbm_tb_s"] / local["hbm_tb_s"], "SM ratio": b200["sms"] / local["sms"]}
    low_scale, high_scale = max(scales.values()), min(scales.values())
    out["ends"] = tuple(next(k for k, v in scales.items() if v == scale) for scale in (low_scale, high_scale))
    b200_floor = {c: (fixed_us + case_bytes(c) / (bytes_per_us * low_scale),
                      fixed_us + case_bytes(c) / (bytes_per_us * high_scale)) for c in cases}
    out["fit"] = {"card": card, "fixed_us": fixed_us, "tb_s": bytes_per_us / 1e6, "points": len(cases) + len(large),
                  "scales": scales}
    out["b200_floor_us"] = tuple(harness.geomean([b200_floor[c][end] for c in cases]) for end in (0, 1))
    floor_geo = harness.geomean([floor[c] for c in cases])
    for name, row in record["impls"].items():
        if not estimable(row):
            continue
        ratios = _ratios_over(_times(row), floor, cases)
        if ratios is not None:
            out["impls"][name] = tuple(harness.geomean([ratios[c] * b200_floor[c][end] for c in cases])
                                       for end in (0, 1))
        elif time_us(row.get("geomean_us")):
            ratio = row["geomean_us"] / floor_geo
            out["impls"][name] = tuple(ratio * end for end in out["b200_floor_us"])
    return out


def calibration(record: dict, figures: dict) -> dict:
    """Method 2: {'missing': [why], 'ratios': {k: B200/local}, 'source': ..., 'impls': {name: (low, high)}}."""
    out = {"method": "calibration", "missing": [], "impls": {}}
    board = figures["board"]["scores_us"]
    ratios = {}
    for name, row in record["impls"].items():
        match = BOARD_ENTRY.match(name)
        if match and match.group(1) in board and estimable(row) and time_us(row.get("geomean_us")):
            ratios[f"#{match.group(1)} ({name})"] = board[match.group(1)] / row["geomean_us"]
    if ratios:
        out["source"] = "board entries in this run"
    else:
        shipped = figures["calibration"]
        card = card_of(record.get("device"), figures)
        if card != shipped["card"]:
            out["missing"].append(f"the run holds no board entry (a variant named boardK_*.py) and the shipped"
                                  f" calibration is from the {shipped['card']}, not {record.get('device')!r}")
            return out
        ratios = {f"#{k}": board[k] / us for k, us in shipped["entries_us"].items()}
        out["source"] = f"shipped: {shipped['card']}, {shipped['date']}"
    out["ratios"] = ratios
    out["ends"] = (f"entry {min(ratios, key=ratios.get)}", f"entry {max(ratios, key=ratios.get)}")
    for name, row in record["impls"].items():
        if estimable(row) and time_us(row.get("geomean_us")):
            out["impls"][name] = (row["geomean_us"] * min(ratios.values()), row["geomean_us"] * max(ratios.values()))
    return out


def standings(figures: dict, environ=os.environ, home: Path = Path.home()) -> tuple[list[dict], str]:
    """The board's public standings (rows as remote.fetch_standings gives) and where they come from."""
    api_url, cli_id = remote.popcorn_settings(environ, home)
    said = "POPCORN_API_URL is not set"
    if api_url:
        try:
            rows = remote.fetch_standings(api_url, leaderboard.LEADERBOARD, BOARD_GPU, cli_id, limit=100)
            return rows, f"the server's standings, {len(rows)} entries"
        except remote.RemoteError as error:
            said = str(error).rstrip(".")
    board = figures["board"]
    rows = [{"rank": int(k), "submission_score": us / 1e6} for k, us in board["scores_us"].items()]
    return rows, f"recorded standings, top {len(rows)}, {board['source']}, {board['date']} ({said})"


def estimate(record: dict, figures: dict | None = None, board: tuple[list[dict], str] | None = None) -> dict:
    """Both methods over one compare record, and per implementation the range with its ends' methods and ranks."""
    figures = figures or load_figures()
    record = with_case_labels(record)
    rows, where = board if board is not None else standings(figures)
    methods = [bandwidth_model(record, figures, leaderboard_cases()), calibration(record, figures)]
    impls = {}
    for name in record["impls"]:
        ends = [(value, f"{m['method']}, {label}") for m in methods if name in m["impls"]
                for value, label in zip(m["impls"][name], m["ends"])]
        if ends:
            (low, low_by), (high, high_by) = min(ends), max(ends)
            impls[name] = {"low_us": low, "low_by": low_by, "high_us": high, "high_by": high_by,
                           "ranks": (remote.rank_of(low, rows), remote.rank_of(high, rows))}
    return {"device": record.get("device"), "commit": record.get("commit"), "date": record.get("date"),
            "methods": methods, "impls": impls, "standings": where, "standings_size": len(rows)}


def for_run(summary: dict, cases: list[str], device: str, commit: str, date: str) -> dict:
    """The estimate of a compare run just made (compare.summarize's impls and its case names)."""
    return estimate({"device": device, "commit": commit, "date": date, "cases": cases, "impls": summary})


def for_score(name: str, geomean_us: float, device: str, compare_dir: Path) -> dict:
    """The estimate of one measured geomean (judge's public score), beside the floor of the last compare run
    recorded in compare_dir on this GPU, where there is one (its commit and date then head the estimate;
    the score and the floor come from two runs, so drift between them is in the estimate)."""
    path = Path(compare_dir) / "compare.json"
    record = {"device": device, "commit": history.git_commit(), "date": datetime.date.today().isoformat(),
              "cases": [], "impls": {}}
    unread = None
    try:
        found = read_record(path) if path.is_file() else None
    except EstimateError as error:
        found, unread = None, str(error)
    if found is not None and found.get("device") == device:
        record = found
    row = {"kind": "submission", "per_case_us": {}, "geomean_us": geomean_us}
    report = estimate(dict(record, impls={**{k: v for k, v in record["impls"].items() if k != name}, name: row}))
    report["impls"] = {k: v for k, v in report["impls"].items() if k == name}  # the judged file's, not the run's rows
    if not record["impls"]:
        report["methods"][0]["missing"].insert(0, unread or f"no compare run of the {device} in {compare_dir}")
    return report


def _rank(rank: int, size: int) -> str:
    return str(rank) if rank <= size else f"below the {size} listed"


def format_estimate(report: dict) -> str:
    lines = [f"B200 estimate (an estimate, not a score) from {report['device']}, commit {report['commit']},"
             f" {report['date']}:"]
    width = max([len(n) for n in report["impls"]] + [14]) + 2
    for name, row in sorted(report["impls"].items(), key=lambda kv: kv[1]["low_us"]):
        first, last = (_rank(r, report["standings_size"]) for r in row["ranks"])
        lines.append(f"  {name:<{width}}{row['low_us']:6.2f} - {row['high_us']:6.2f} us  rank {first}"
                     f"{'' if first == last else f' to {last}'}  (low: {row['low_by']}; high: {row['high_by']})")
    if not report["impls"]:
        lines.append("  no estimate: neither method has its inputs (below)")
    for method in report["methods"]:
        if method["missing"]:
            lines.append(f"  {method['method']}: not computed: {'; '.join(method['missing'])}")
        elif "fit" in method:
            fit = method["fit"]
            lines.append(f"  {method['method']}: floor on the {fit['card']} = {fit['fixed_us']:.2f} us +"
                         f" bytes / {fit['tb_s']:.2f} TB/s ({fit['points']} cases); bandwidth x"
                         f" {fit['scales']['HBM ratio']:.2f} (HBM) to x {fit['scales']['SM ratio']:.2f} (SMs):"
                         f" B200 floor {method['b200_floor_us'][0]:.2f} - {method['b200_floor_us'][1]:.2f} us")
        else:
            ratios = ", ".join(f"{k} {v:.3f}" for k, v in method["ratios"].items())
            lines.append(f"  {method['method']}: B200 / local {ratios} ({method['source']})")
    lines.append(f"  ranks against {report['standings']}")
    return "\n".join(lines)


def history_fields(name: str, report: dict) -> dict | None:
    """What history keeps of one row's estimate, or None where it has none."""
    row = report["impls"].get(name)
    return None if row is None else {"mode": name, "gpu": report["device"], "commit": report["commit"],
                                     **{k: v for k, v in row.items() if k != "ranks"}}


def record_estimates(names: list[str], report: dict) -> None:
    """Each named row's B200 estimate as a history entry of its own kind, never a score."""
    for fields in filter(None, (history_fields(name, report) for name in names)):
        history.append_entry(history.estimate_entry(fields))
