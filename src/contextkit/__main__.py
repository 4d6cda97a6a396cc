"""``python -m contextkit``: the command line, as the ``contextkit`` script runs it."""

from contextkit.cli import main

if __name__ == "__main__":
    main()
