"""The performance suite: drives the installed server over stdio with the official SDK client.

Run `python -m benchmarks.run` from the repository root (see benchmarks/README section in the main README).
"""
