"""Analysis of scored runs: agreement with human labels, paired comparison of two runs, and
the HTML reports of both and of a run."""
