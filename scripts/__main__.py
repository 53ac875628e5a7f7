from scripts.cli import cli

cli()
