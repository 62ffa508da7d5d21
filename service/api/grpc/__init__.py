"""The gRPC servicers, their shared context, the server, and stub generation."""
