"""Report pages: one document model (:mod:`.document`), one HTML renderer (:mod:`.render`), the plots
(:mod:`.figures`), and the pages built on them: the five-step de-identification report
(:mod:`.five_steps` builds its dict from a :class:`deid_core.assessing.ReleaseAssessment`,
:mod:`.assessment_page` draws it, with ``preface`` sections a caller adds), ``deid search``
(:mod:`.search_page`), ``deid utility`` (:mod:`.utility_page`) and the steps truncate, codes, subsample and
geo (:mod:`.step_pages`); every page opens with :mod:`.verdict` and offers its policy through
:mod:`.policy_table` (earlier steps from :mod:`.operations`).  A release is measured by
:func:`deid_core.assess_release` (what happened to each column: :mod:`deid_core.column_fates`); the report
words it and measures nothing."""
from __future__ import annotations

from ..column_fates import EXAMPLE_MIN_RECORDS, describe_step, level_names
from .assessment_page import assessment_document, release_page, render_html
from .document import Change, Document, Figure, Mark, Paragraph, Preformatted, Section, Strong, Table, Verdict
from .figures import plots, search_plot
from .five_steps import LONGITUDINAL_SOURCES, SOURCES, build_report, longitudinal_section
from .render import CSS, fmt, pct, render
from .policy_table import policy_steps_table, reapply_blocks
from .search_page import render_search_html, search_document
from .step_pages import codes_document, geo_document, subsample_document, truncate_document
from .verdict import recommended_range, threshold_note, verdict_section
from .utility_page import render_utility_html, utility_document

__all__ = ["codes_document", "geo_document", "policy_steps_table", "reapply_blocks", "recommended_range",
           "subsample_document", "threshold_note", "truncate_document", "verdict_section",
           "CSS", "Change", "Document", "EXAMPLE_MIN_RECORDS", "Figure", "LONGITUDINAL_SOURCES", "Mark",
           "Paragraph", "Preformatted", "SOURCES", "Section", "Strong", "Table", "Verdict", "assessment_document",
           "build_report", "describe_step", "fmt", "level_names", "longitudinal_section",
           "pct", "plots", "release_page", "render", "render_html", "render_search_html", "render_utility_html",
           "search_document", "search_plot", "utility_document"]
