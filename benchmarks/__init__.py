"""The studies bench.py runs, one module each (cli.py, bench.py's command line, lists them); common.py
and steps.py hold what they share."""
