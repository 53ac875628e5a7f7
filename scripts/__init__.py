"""The workspace's tools: the leaderboard loop behind one click CLI (scripts/cli.py).

Run from the workspace root as `python scripts/cli.py ...` or `python -m scripts ...`.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBMISSION = ROOT / "submission.py"
HELION_SUBMISSION = ROOT / "submissions" / "submission_helion.py"
