"""``python -m judge_metrics score ...``: the command line (see ``cli/main.py``), also reachable
as the console command ``judge-metrics``."""

from .cli.main import main

raise SystemExit(main())
