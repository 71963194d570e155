"""``python -m nnisa`` = the ``nnisa`` command."""

from .cli import main

main()
