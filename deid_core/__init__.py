"""De-identification core: risk, hierarchies, transformations, reports."""
