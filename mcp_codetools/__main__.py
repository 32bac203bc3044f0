"""`python -m mcp_codetools` runs the command line, as the `mcp-codetools` script does."""

from mcp_codetools.cli import main

raise SystemExit(main())
