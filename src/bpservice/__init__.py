"""bpservice: a reference implementation of the building-performance data service.

It is the embedded default that `bpsync` talks to on a fresh machine, the sandbox every test runs
against over real HTTP, and a server people can run for their own integration tests.
"""

__version__ = "0.1.0"
