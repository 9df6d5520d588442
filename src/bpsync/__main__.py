"""`python -m bpsync`: the same command line as the `bpsync` script."""

from bpsync.cli.entry import main

main()
