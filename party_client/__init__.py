"""Party clients: encodings, cuckoo tables, blinded comparisons, CLI."""
