"""CLI commands, one module per area; each registers its commands on ``attnprep.app.app``."""
