"""The folder watcher (`bpsync watch`). `status` is the contract between the watcher, which writes
its state, and the readers of that state (`bpsync watch status`, the terminal app)."""
