"""``python -m splitdesk`` is the ``splitdesk`` command."""

import sys

from splitdesk.cli.main import main

sys.exit(main())
