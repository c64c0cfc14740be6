"""The one agent interface every player in block-env implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Chooses a legal action from what one seat observes."""

    def act(self, observation: dict[str, np.ndarray]) -> int:
        """An action id whose ``observation['action_mask']`` entry is 1."""
        ...
