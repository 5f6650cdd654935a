"""The benchmark runner: problem discovery, the worker pool, result rows, metrics, the HTML report."""
