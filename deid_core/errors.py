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
    the ``deid`` command names its flags instead (``--max-suppression``, :meth:`flagged`)."""


class DeidWarning(UserWarning):
    """A condition the data owner should look at (e.g. non-uniform pseudonyms)."""
