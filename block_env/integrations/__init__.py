"""Adapters that plug block-env into other training stacks, one module per stack.

* ``block_env.integrations.rllib``: Ray RLlib (new API stack): a ``MultiAgentEnv``, a masked
  RLModule, league self-play and an agent that plays an RLlib checkpoint (needs the
  ``rllib`` extra).

Nothing is imported here: ``import block_env`` (or this package) never imports a training
library; each adapter imports its library when it is itself imported.
"""
