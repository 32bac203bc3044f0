"""Code intelligence from language servers: starting them, keeping them in step, reading their answers."""
