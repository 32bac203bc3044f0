"""Starts bubblewrap's supervisor from its compiled form: `python -I -S supervise.py --keep PATH … -- CMD`.

Run as a file, `supervisor.py` would be compiled again before every command (some 20 ms); imported, it is
read from `__pycache__`, which the server writes at its probe (`sandbox.compiled_launcher`). Isolated mode
leaves this folder off the import path, so it is put there for this one import.
"""

import sys

if __name__ == "__main__":  # imported (a check that every module imports), it must not run
    sys.path.insert(0, __file__.rpartition("/")[0])
    sys.exit(__import__("supervisor").main(sys.argv[1:]))
