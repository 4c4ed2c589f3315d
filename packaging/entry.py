"""The frozen bundle's entry point: the ``splitdesk`` command (``splitdesk.cli.main.main``)."""

import sys

from splitdesk.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
