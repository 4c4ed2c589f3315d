"""The frozen bundle's entry point: the ``splitdesk`` command (``splitdesk.cli.main``)."""

import sys

from splitdesk.cli import main

if __name__ == "__main__":
    sys.exit(main())
