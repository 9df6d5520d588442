"""Look-ups on the service before checking: the profile's meter map, the organisation's meters
and the readings already stored, and meters the file names that can be created."""
