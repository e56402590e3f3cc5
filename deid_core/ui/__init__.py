"""The release workbench in the browser (``deid ui``): load a table, declare its columns, assess, search,
pick a node and export the release, policy and report, all through the library's public functions."""
from .app import create_app

__all__ = ["create_app"]
