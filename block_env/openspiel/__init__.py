"""Block as an OpenSpiel game and the exact analysis of small tile sets.

Importing this package registers ``"python_block_env"`` with OpenSpiel (needs the
``open_spiel`` package: ``pip install -e ".[openspiel]"``)::

    import pyspiel
    import block_env.openspiel  # noqa: F401  (registers the game)

    game = pyspiel.load_game("python_block_env", {"max_pip": 2, "hand_size": 2})

``python -m block_env.openspiel nashconv ...`` computes NashConv tables (``analysis``).
"""

from block_env.openspiel.game import GAME_NAME, BlockGame, BlockState

__all__ = ["GAME_NAME", "BlockGame", "BlockState"]
