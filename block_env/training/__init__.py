"""The training stack behind ``python train.py``: one file per training engine, plus the
plumbing they share, written once.

* ``config``: ``TrainConfig`` (every setting of a run), YAML/``key=value`` loading, checks.
* ``errors``: the exceptions that ``train.py`` turns into one line and an exit status.
* ``runs``: the run folder (lock, log, checkpoints, signals), device, progress bar,
  TensorBoard.
* ``results``: evaluation against the baseline bots, the final tables and learning curve.
* ``rollout``: the batched games the native PPO learns from, and their advantages (GAE).
* ``ppo``: self-play PPO on the batched engine (``algo: ppo``, the default), on one rank or
  many: the run's settings resolved once (``RunSpec``), a loop of collect, update,
  log/evaluate, checkpoint, and ``Callback`` hooks into it.
* ``probes``: callbacks that measure the policy during a run (the NashConv probe), attached
  by ``cli`` when the config asks for them.
* ``distributed``: the ranks of a data-parallel (DD-PPO) run and the collectives it needs.
* ``launch``: ``python train.py nproc=N``, the local ranks started with torchrun's launcher.
* ``ray_train``: the same ranks under Ray Train (``ray_workers=N``), locally or on a cluster.
* ``cli``: ``python train.py``'s command line (also ``block-env train``).
* ``sb3``: sb3-contrib ``MaskablePPO`` on the single-agent wrapper (``algo: sb3``).
* ``rllib``: RLlib league self-play, on one machine or a Ray cluster (``algo: rllib``).

Each engine exposes ``train_<algo>(cfg, resume=..., force=...) -> dict`` (the final summary);
``train.py`` picks one by ``cfg.algo``. Nothing here imports ``train.py``.
"""
