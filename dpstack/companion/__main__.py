"""``python -m dpstack.companion COMMAND …``: the companion's command line (:mod:`dpstack.companion.cli`)."""

import sys

from dpstack.companion.cli import main

sys.exit(main())
