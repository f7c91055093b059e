"""Scale: device meshes and shardings, multi-host start-up, preemption-safe runs."""
