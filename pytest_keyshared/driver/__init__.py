"""The driver: applies a scenario to a target through its client and records what happens as a trace.

``run_scenario(target, scenario, seed=..., out_dir=...)`` returns a :class:`RunResult` with the verdict and
the paths of the trace, the scenario, the verdict and the broker log.
"""

from pytest_keyshared.driver.progress import Progress
from pytest_keyshared.driver.recorder import Counters
from pytest_keyshared.driver.run import RunResult, StepOutcome, run_scenario, topic_for

__all__ = ["Counters", "Progress", "RunResult", "StepOutcome", "run_scenario", "topic_for"]
