"""Times as the workspace reads them: every time the server, popcorn and history give, in UTC, and every
duration through one guarded reader (a 400-digit integer, 'nan' or '1.2.3' is no time, never a traceback)."""
import datetime
import math
import re

UTC = datetime.timezone.utc
MIN_US, MAX_US = 1e-3, 1e9  # a nanosecond (no launch is shorter) to 1,000 s (past every runner's limit)
NOT_A_TIME = f"not a time (a finite number of microseconds from {MIN_US:g} to {MAX_US:g})"
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def utc_time(text) -> datetime.datetime | None:
    """An ISO 8601 time as an aware datetime in UTC: one without an offset is UTC (the server's and popcorn's
    times are UTC), one with an offset is converted (a deadline at 01:00-05:00 closes at 06:00 UTC). None where
    it does not read as a time, or falls outside the years 1-9999 once in UTC."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # OverflowError: an offset that moves year 1 or 9999 out of range
        return None


def number(value) -> float | None:
    """An int, a float, or a number written in ASCII (popcorn's text) as a finite float; None for anything else:
    a bool, nan or inf, text float() would take but nobody prints ('1_0', Unicode digits), and an integer too
    large for a float (float() raises OverflowError on 400 digits)."""
    if isinstance(value, str):
        value = value.strip() if _DECIMAL.fullmatch(value.strip()) else None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        result = float(value)
    except OverflowError:
        return None
    return result if math.isfinite(result) else None


def time_us(value) -> float | None:
    """A time in microseconds as JSON holds one (a number, never text): number() within MIN_US..MAX_US, else
    None (1e-300 read 0.00 us and ranked first)."""
    result = None if isinstance(value, str) else number(value)
    return result if result is not None and MIN_US <= result <= MAX_US else None
