"""The party client's error for bad input and refusals (CLI: exit 2, one line)."""
from common.parameters import NamedParameters


class PartyError(Exception):
    """Bad input or a refusal, explained in one line; nothing was written."""


class ParameterError(NamedParameters, PartyError):
    """A bad value of one parameter, named as the Python API calls it (``max_risk``); the CLI names
    its flag instead (``--max-risk``, :meth:`flagged`).  ``template`` has ``{name}`` where the name goes."""

    def __init__(self, parameter: str, template: str) -> None:
        self.parameter = parameter
        super().__init__(template.replace("{name}", "{" + parameter + "}"), parameter)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a query whose session stays open at the key holder: the message says how to resume it."""
