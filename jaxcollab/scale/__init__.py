"""Device mesh, sharding helpers, multi-host initialisation."""
