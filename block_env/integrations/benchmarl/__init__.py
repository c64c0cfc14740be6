"""BenchMARL on block-env (needs the ``benchmarl`` extra, in its own venv).

* ``task``: ``BlockTask`` (``block/two_player``, ``block/three_player``,
  ``block/four_player``, ``block/partnership``: ``block_env.parallel_env`` in TorchRL's
  wrapper), their YAML configurations and ``register()``, which adds them to BenchMARL's
  registry (the Hydra plugin ``hydra_plugins.block_env_benchmarl`` calls it).
* ``agent``: ``export_policy`` and ``load_agent``: a group's network as a block-env agent.
* ``leaderboard``: BenchMARL's MAPPO, IPPO and QMIX under a wall-clock budget (the
  benchmark's ``benchmarl-*`` algorithms).
"""

from block_env.integrations.benchmarl.task import BlockTask, BlockTaskClass, register

__all__ = ["BlockTask", "BlockTaskClass", "register"]
