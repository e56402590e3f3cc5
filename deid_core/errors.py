"""Errors and warnings of :mod:`deid_core`."""
from __future__ import annotations

from common.parameters import NamedParameters


class DeidInputError(ValueError):
    """Bad user input (spec, data, hierarchy, population table).

    The message is always a single line: the CLI prints it as is and exits 2.
    """

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class ParameterError(NamedParameters, DeidInputError):
    """Bad input about parameters of a library call, named as the call spells them (``max_suppression``);
    the ``deid`` command names its flags instead (``--max-suppression``; :func:`deid_core.cli.options.flagged`).
    ``template`` holds ``{<name>}`` where each name goes; a value shown in it goes through :func:`literal`."""

    @property
    def parameter(self) -> str:
        """The parameter the error is about (the first it names)."""
        return self.names[0]

    def __reduce__(self):  # a worker process's error comes back whole, its names still mappable to flags
        return type(self), (self.template, *self.names)


def literal(value: object) -> str:
    """``value`` as text a :class:`ParameterError` template shows as it is (its braces doubled)."""
    return str(value).replace("{", "{{").replace("}", "}}")


class DeidWarning(UserWarning):
    """A condition the data owner should look at (e.g. non-uniform pseudonyms)."""
