"""The importer's fixtures (private home and keyring, a client of the real service, the sample
register imported) for the import-fidelity corpus."""

from tests.importer.conftest import anyio_backend, client, isolated, registered  # noqa: F401
