"""Hydra's search path plugin of block-env (``hydra_plugins`` is Hydra's namespace for
plugins it finds by itself)."""
