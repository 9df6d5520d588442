"""The folder watcher (`bpsync watch`, docs/watch.md).

- `core`: the `Watcher` (scheduler thread + import loop thread, a queue between them);
- `rules`: pure rules (ignored names, stability, backoff, error verdicts, names, receipts);
- `ledger`: the content-hash ledger; `files`: file-system edges; `log`: human / JSON lines;
- `service`: the import function (the import engine with its journal);
- `status`: the contract between the watcher, which writes its state, and the readers of that
  state (`bpsync status` through `summary.watch_status_lines`, the terminal app)."""
