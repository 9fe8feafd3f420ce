"""The Gradio demo of every metric: ``make app`` serves it on http://127.0.0.1:7860.

``python app.py [--host HOST] [--port PORT] [--metric NAME ...]``
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from judge_metrics.demo import build_demo, launch  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="judge-metrics demo (Gradio)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--metric", action="append", help="only this metric (repeatable)")
    args = parser.parse_args(argv)
    launch(build_demo(args.metric), server_name=args.host, server_port=args.port)


if __name__ == "__main__":
    main()
