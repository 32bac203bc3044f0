"""Starts bubblewrap's supervisor from its compiled form: `python -I -S supervise.py --keep PATH … -- CMD`.

Run as a file, `supervisor.py` would be compiled again before every command (some 20 ms); imported, it is
read from `__pycache__`, which the server writes at its probe (`sandbox.compiled_launcher`). Isolated mode
leaves this folder off the import path, so it is put there for this one import.

It ends with `os._exit` once its streams are flushed: the interpreter's shutdown (module teardown, ctypes)
took 6-17 ms of CPU per command (by load), against 12.5 ms for the whole start of `python -I -S`; it has nothing
to do here (the kernel closes the descriptors; as the namespace's first process, its exit ends the rest).
"""

import os
import sys

if __name__ == "__main__":  # imported (a check that every module imports), it must not run
    sys.path.insert(0, __file__.rpartition("/")[0])
    status = __import__("supervisor").main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
