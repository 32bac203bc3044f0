"""The MCP boundary: the only part of the package that speaks MCP.

`server` turns the tools into MCP tools and results; `stdio` and `http` serve it on the two transports;
`http_sessions` and `state_handles` keep per-client state for the two HTTP eras; `eras` tells the eras
apart on stdio; `elicit`, `client_roots` and `client_log` ask the user, learn the client's roots and send
it messages. Everything below this folder is plain Python that knows nothing of MCP.
"""
