"""Times as the workspace reads them: every time the server, popcorn and history give, in UTC."""
import datetime


def utc_time(text) -> datetime.datetime | None:
    """An ISO 8601 time as an aware datetime: one without an offset is UTC (the server's and popcorn's
    times are UTC). None where it does not read as a time."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)
