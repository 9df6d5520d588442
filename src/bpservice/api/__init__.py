"""HTTP layer: one router per resource, dependencies, schemas, and the cross-cutting middleware."""
