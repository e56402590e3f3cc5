"""Releases built on links: link, then de-identify (:mod:`.linked_release`: the join, :mod:`.deidentification`,
the reports with :mod:`.linkage`), and de-duplication across many registries (:mod:`.many_registries`)."""
from __future__ import annotations

from .many_registries import dedup_many
from .deidentification import METHODS
from .linked_release import link_release

__all__ = ["link_release", "dedup_many", "METHODS"]
