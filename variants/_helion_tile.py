"""For the Helion variants: a private copy of the Helion submission with its configs changed on every benchmark shape."""
from pathlib import Path

import eval as harness

HELION_SUBMISSION = Path(__file__).resolve().parent.parent / "submissions" / "submission_helion.py"
# conv1d_groups' loads at W = 4, in the order Helion 0.3.3 numbers them for load_eviction_policies (read off
# its generated Triton code): the bias, x's group, ten taps, x's group before, six taps.
X_GROUP, X_GROUP_BEFORE, LOADS_AT_W4 = 1, 12, 19


def _helion_module(module_name: str):
    """The Helion submission with its lane-shuffle table emptied, so every shape takes conv1d_groups: the kernel
    whose configs these variants change."""
    module = harness.load_submission(HELION_SUBMISSION, module_name)
    module.LANES_CONFIGS.clear()
    return module


def _benchmark_keys():
    return [tuple(case.args[k] for k in ("B", "D", "S", "W")) for case in harness.cases_from_task("benchmarks")]


def helion_with_configs(module_name: str, config: dict):
    """custom_kernel of the Helion submission loaded as `module_name`, `config` on task.yml's benchmark shapes."""
    module = _helion_module(module_name)
    for key in _benchmark_keys():
        module.SHAPE_CONFIGS[key] = dict(config)
    return module.custom_kernel


def helion_with_load_policies(module_name: str, policies: dict):
    """custom_kernel of the Helion submission loaded as `module_name`, its own config on each benchmark shape
    with the eviction policies `policies` ({load index: 'first' or 'last'}) on those loads."""
    module = _helion_module(module_name)
    for key in _benchmark_keys():
        if key[3] != 4:
            raise ValueError(f"the load numbering here is W = 4's; benchmark shape {key} has W = {key[3]}")
        wanted = [policies.get(index, "") for index in range(LOADS_AT_W4)]
        module.SHAPE_CONFIGS[key] = {**module.SHAPE_CONFIGS[key], "load_eviction_policies": wanted}
    return module.custom_kernel
