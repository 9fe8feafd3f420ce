"""``python -m shared score ...``: the batch-scoring command line (see ``shared/cli/main.py``)."""

from .cli.main import main

raise SystemExit(main())
