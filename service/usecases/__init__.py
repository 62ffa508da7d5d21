"""Use cases the transports share: the audited query path, audited analyses, calibration, adaptation.

Each transport (gRPC, GraphQL, the CLI) parses its input, calls one of these and translates errors; what is
checked, run and recorded is decided here once, below the entry points and the wiring.
"""
