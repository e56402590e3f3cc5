"""Secure linkage protocol messages (generated stubs live next to the .proto files)."""
