"""The studies bench.py runs, one module each (bench.py lists them); common.py and steps.py hold what they share."""
