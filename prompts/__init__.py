"""Text the agents read (tool descriptions) and templates for optional model calls, by name."""

from importlib import resources


def load(name: str) -> str:
    """The text of `prompts/<name>.txt`."""
    return resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8").strip()
