"""Key-holder gRPC service: Paillier keys per session, sealed relay, zero tests."""
