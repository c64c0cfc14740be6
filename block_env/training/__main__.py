"""``python -m block_env.training [config] [key=value ...]``: the training command line."""

from block_env.training.cli import run

run()
