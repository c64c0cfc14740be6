"""``python -m block_env.benchmark``: see ``block_env.benchmark.cli``."""

import sys

from block_env.benchmark.cli import main

sys.exit(main())
