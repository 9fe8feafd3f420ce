"""Judge cards: a judge certified on the user's own rows (``certify``, docs/CERTIFY.md).

edits (the deterministic edits under a seed), checks (which apply, each row's failure), rates
(the failure rate, its Clopper-Pearson interval, the outcome), run (``certify``: the scoring
rounds), report (the report as data and text), html (the card as a page), card (the Markdown
card; ``score --card`` and ``assert_metric(card=...)``)."""
