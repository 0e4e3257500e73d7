"""The demos behind `meshtensor demo`."""
