"""The party client's error for bad input and refusals (CLI: exit 2, one line)."""
from common.parameters import NamedParameters


class PartyError(Exception):
    """Bad input or a refusal, explained in one line; nothing was written."""


class ParameterError(NamedParameters, PartyError):
    """A bad value of one parameter, named as the Python API calls it (``max_risk``); the CLI names
    its flag instead (``--max-risk``, :meth:`flagged`).  ``template`` has ``{name}`` where the name goes,
    and ``{<other>}`` where each of ``others`` goes (a de-identification error's further parameters)."""

    def __init__(self, parameter: str, template: str, *others: str) -> None:
        self.parameter = parameter
        super().__init__(template.replace("{name}", "{" + parameter + "}"), parameter, *others)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a query whose session stays open at the key holder: the message says how to resume it."""
