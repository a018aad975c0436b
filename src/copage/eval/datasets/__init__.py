"""Datasets: conversations with probes (LoCoMo format) and the built-in ones."""

from copage.eval.datasets.locomo import load_locomo, parse_locomo
from copage.eval.datasets.probes import Conversation, Dataset, DatasetError, Probe

__all__ = ["Conversation", "Dataset", "DatasetError", "Probe", "load_locomo", "parse_locomo"]

from copage.eval.datasets.resolve import load_dataset, preset_names

__all__ += ["load_dataset", "preset_names"]
