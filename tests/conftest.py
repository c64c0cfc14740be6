"""Fixtures shared by the tests."""

from __future__ import annotations

import pytest
from helpers import CONFIGS, config_id


@pytest.fixture(params=CONFIGS, ids=config_id)
def config(request) -> dict:
    return request.param
