"""Servers (docs/architecture.md "servers"): the MCP server and the viewer with its play page,
all on 127.0.0.1."""
