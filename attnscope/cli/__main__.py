"""``python -m attnscope.cli``: the ``attnscope`` command."""

import sys

from attnscope.cli import main

sys.exit(main())
