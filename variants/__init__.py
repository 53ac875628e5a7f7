"""Experiment variants: submission-style files (each defines custom_kernel) kept to be timed beside
the submission with `python scripts/cli.py compare --variant variants/NAME.py`. Never submitted."""
