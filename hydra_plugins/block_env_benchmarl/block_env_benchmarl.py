"""BenchMARL's Hydra command finds the Block tasks: in a program that has imported BenchMARL
(``python -m benchmarl.run``), this plugin registers ``block/<task>`` in BenchMARL's task
registry and adds the tasks' YAML configurations to Hydra's search path. In any other
Hydra program it does nothing."""

from __future__ import annotations

import sys

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class BlockEnvSearchPathPlugin(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        if "benchmarl" not in sys.modules:
            return
        from block_env.integrations.benchmarl.task import register

        register()
        search_path.append("block-env", "pkg://block_env.integrations.benchmarl.conf")
