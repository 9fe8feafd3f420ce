"""Self-contained HTML reports of a scored run, a comparison, an agreement report and a
calibration report.

One file that opens offline: Jinja2 templates (autoescape on: every text from the data is
escaped), plots as inline SVG (``plots``), the styles and the one script inlined. The row data
travel as JSON in a ``<script type="application/json">`` element, escaped so that no value can
close it (``<``, ``>``, ``&``, U+2028/U+2029 as ``\\uXXXX``), and the script puts every value in
the page with ``textContent``. A Content-Security-Policy allows no network request and only the
report's own script (by its hash), so even markup that slipped through could neither load nor run
anything.

Big runs: the row table holds at most ``max_rows`` rows (a seeded random sample, said so in the
report); aggregates, intervals and plots always use every row.
"""

from .agreement_report import write_agreement_html
from .alignment_report import write_alignment_html
from .calibration_report import write_calibration_html
from .compare_report import write_compare_html
from .page import DEFAULT_MAX_ROWS, script_json
from .score_report import write_score_html

__all__ = ["DEFAULT_MAX_ROWS", "script_json", "write_agreement_html", "write_alignment_html",
           "write_calibration_html",
           "write_compare_html", "write_score_html"]
