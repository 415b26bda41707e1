"""`python3 -m braid ...` is the same as `python3 -m braid.models ...`."""

import sys

from .models import main

sys.exit(main())
