"""Experiments of copage bench (see base.py for the interface)."""
