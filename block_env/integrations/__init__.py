"""Adapters that plug block-env into other training stacks, one module per stack.

* ``block_env.integrations.rllib``: Ray RLlib (new API stack): a ``MultiAgentEnv``, a masked
  RLModule, league self-play and an agent that plays an RLlib checkpoint (needs the
  ``rllib`` extra).

An adapter's agents register themselves: ``agents`` names none of them. The RLlib agent is
declared in the packaging metadata as the entry point ``rllib`` of the group
``block_env.agents`` (``pyproject.toml``), so ``agents.make("rllib", path=RUN)`` and the
agent spec ``rllib:path=RUN`` find it, and import Ray only when it is built.

Nothing is imported here: ``import block_env`` (or this package) never imports a training
library; each adapter imports its library when it is itself imported.
"""
