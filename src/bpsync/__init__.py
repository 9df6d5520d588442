"""bpsync: get utility data into a building-performance platform, and scores and reports back out."""

__version__ = "0.1.0"
