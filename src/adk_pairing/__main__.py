"""``python -m adk_pairing``: the same command as the ``adk-pairing`` script."""

from adk_pairing.cli import main

if __name__ == "__main__":
    main()
