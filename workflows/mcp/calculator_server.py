"""A small MCP server for workflows/mcp-calculator.yaml (stdio; needs the mcp extra)."""

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

server = MCPServer("calculator")


class Total(BaseModel):
    total: float


@server.tool(description="Add two numbers.")
def add(a: float, b: float) -> Total:
    return Total(total=a + b)


@server.tool(name="math.multiply", description="Multiply two numbers.")
def multiply(a: float, b: float) -> Total:
    return Total(total=a * b)


if __name__ == "__main__":
    server.run("stdio")
