"""``rlbench autoconfig``'s driver: the spec and its search space (``space``), requests as trial plans and
finished trials read back with the resumable state (``trial_files``), and the runner the decision core's
session drives (``driver``). The decisions themselves are :mod:`rlbench.autoconfig`'s, pure."""

from rlbench.run.autoconfig_driver.driver import Outcome, run_autoconfig
from rlbench.run.autoconfig_driver.space import Setup, parse_budget, prepare

__all__ = ["Outcome", "Setup", "parse_budget", "prepare", "run_autoconfig"]
