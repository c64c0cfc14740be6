"""BenchMARL on block-env: Block as a BenchMARL task family (``block_env.parallel_env`` in
TorchRL's wrapper), needing the ``benchmarl`` extra.

* ``task``: ``BlockTask`` (``block/two_player``, ``block/three_player``,
  ``block/four_player``, ``block/partnership``), their YAML configurations and
  ``register()``, which adds them to BenchMARL's registry.
"""

from block_env.integrations.benchmarl.task import BlockTask, BlockTaskClass, register

__all__ = ["BlockTask", "BlockTaskClass", "register"]
