"""The rules over the wire: each provider's rule for tool calls, once, and the checks on them."""
