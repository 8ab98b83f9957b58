"""Learned weights shipped with the package (read with importlib.resources)."""
