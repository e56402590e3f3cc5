"""The party client's error for bad input and refusals (CLI: exit 2, one line)."""


class PartyError(Exception):
    """Bad input or a refusal, explained in one line; nothing was written."""


class ParameterError(PartyError):
    """A bad value of one parameter, named as the Python API calls it (``max_risk``); the CLI names
    its flag instead (``--max-risk``, :meth:`flagged`).  ``template`` has ``{name}`` where the name goes."""

    def __init__(self, parameter: str, template: str) -> None:
        self.parameter, self.template = parameter, template
        super().__init__(template.format(name=parameter))

    def flagged(self) -> str:
        """The message naming the parameter's command-line flag."""
        return self.template.format(name="--" + self.parameter.replace("_", "-"))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a query whose session stays open at the key holder: the message says how to resume it."""
