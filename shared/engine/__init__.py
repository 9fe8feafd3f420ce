"""The judge engine: configuration, backends, prompts, the runner (cache, batching, repairs,
usage and cost) and the checks every judge answer passes. Knows no metric."""
