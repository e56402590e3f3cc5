"""The party client's error for bad input and refusals (CLI: exit 2, one line)."""


class PartyError(Exception):
    """Bad input or a refusal, explained in one line; nothing was written."""
