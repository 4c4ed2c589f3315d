"""``python -m splitdesk`` is the ``splitdesk`` command."""

import sys

from splitdesk.cli import main

sys.exit(main())
