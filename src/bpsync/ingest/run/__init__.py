"""One import run end to end: the pure half (`prepare`: read, understand, map, check, no
network) and the whole import with the service (`import_file`), with the interpreter settings
for its length."""
