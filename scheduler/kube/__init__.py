"""The Kubernetes layer: the only code that talks to an API server (source, sink, leader election, run)."""
