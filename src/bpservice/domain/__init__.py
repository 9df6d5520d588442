"""Pure logic of the service: vocabularies, validation rules, anomaly flags, scoring. No I/O here."""
