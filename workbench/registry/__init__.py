"""The registry: schemas and loading of `hypotheses.yaml` and `experiments/*.yaml`."""

from workbench.registry.experiment import Experiment, MetricSpec, Profile
from workbench.registry.hypothesis import Guard, Hypothesis, Prediction
from workbench.registry.folder import Registry
from workbench.registry.loader import find_root, load_experiment, load_hypotheses, load_registry
from workbench.registry.validate import validate_files

__all__ = [
    "Experiment", "MetricSpec", "Profile", "Guard", "Hypothesis", "Prediction", "Registry", "find_root",
    "load_experiment", "load_hypotheses", "load_registry", "validate_files",
]
