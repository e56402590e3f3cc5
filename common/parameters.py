"""Errors about parameters, worded for whoever called: a library error names the parameters as the Python
API spells them (``max_risk``); a command line maps the same error to its flags (``--max-risk``) in one
place, with :meth:`NamedParameters.flagged`."""
from __future__ import annotations


class NamedParameters:
    """Mixin for an exception about ``names`` (parameters): ``template`` holds ``{<name>}`` where each
    goes, e.g. ``"{top} must be a positive integer"``.  Mix it in before the exception class."""

    def __init__(self, template: str, *names: str) -> None:
        self.template, self.names = template, names
        super().__init__(template.format(**{name: name for name in names}))

    def flagged(self) -> str:
        """The message with each parameter named by its command-line flag."""
        return self.template.format(**{name: "--" + name.replace("_", "-") for name in self.names})
