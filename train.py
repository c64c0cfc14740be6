"""Train a Block policy: ``python train.py [config.yaml] [key=value ...] [--resume|--force]``.

The command line lives in ``block_env.training.cli`` (also ``block-env train`` and ``python -m
block_env.training``); ``python train.py --help`` lists its options.
"""

from block_env.training.cli import main, run, train

__all__ = ["main", "run", "train"]

if __name__ == "__main__":
    run()
