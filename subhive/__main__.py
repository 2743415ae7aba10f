"""``python -m subhive ...``: the CLI, for when the ``subhive`` script is not on PATH (and for child processes)."""

from .cli import run

run()
