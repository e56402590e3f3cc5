"""Key-holder gRPC service: a fresh key pair of the comparison scheme per session, sealed relay, zero tests."""
