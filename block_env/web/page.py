"""The pages' parts: the packaged assets (CSS, scripts, page templates) and filling them in."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["asset", "fill", "json_for_script"]

_SLOT = re.compile(r"\{\{(\w+)\}\}")


@cache
def asset(name: str) -> str:
    """The text of ``block_env/web/static/NAME`` (package data)."""
    return resources.files("block_env.web").joinpath("static", name).read_text(encoding="utf-8")


def fill(template: str, **values: str) -> str:
    """``template`` with each ``{{key}}`` replaced by ``values[key]`` (already HTML); every
    slot must be given, and the values are not searched for slots again."""
    missing = set(_SLOT.findall(template)) - set(values)
    if missing:
        raise KeyError(f"page template slots without a value: {sorted(missing)}")
    return _SLOT.sub(lambda m: values[m.group(1)], template)


def json_for_script(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>`` element (no ``</`` and no ``<!--``)."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")
