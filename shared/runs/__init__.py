"""Dataset runs: score a ``datasets.Dataset`` with several metrics in one process or on Ray
Data, and the readers and writers of the files those runs take and give."""
