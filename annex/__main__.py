"""``python -m annex`` is the ``annex`` command."""

import sys

from annex.cli import main

sys.exit(main())
