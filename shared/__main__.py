"""``python -m shared score ...``: the batch-scoring command line (see ``shared/cli.py``)."""

from .cli import main

raise SystemExit(main())
